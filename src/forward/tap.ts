/**
 * A second route for a lane's items beside its upstreams: the TPU route of
 * `solana-single` (src/tpu/route.ts). `offer` buffers, on admission; `flush`
 * sends, from the lane's pump, so after the acknowledgements. `sole`: the lane
 * has no upstream, so the tap ends the item's trace.
 */
import type { Trace } from '../status/tracker.js';

export interface LaneTap {
  offer(item: string, trace: Trace | undefined, sole: boolean): void;
  flush(): void;
  close(): Promise<void>;
}
