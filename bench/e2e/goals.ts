/**
 * The figures bench:e2e is held to, each a ratio of two measurements
 * taken in the same run, and the goal each is held to. Pure: computed from a
 * door's measurements, so the test suite checks the arithmetic and the
 * verdicts without running the benchmark.
 */

export type Better = 'lower' | 'higher';

export interface Goal {
  /** What the ratio divides by what, as the report prints it. */
  label: string;
  limit: number;
  better: Better;
  /** Report section that lists it: 5 the headline goals, 3 overload. */
  item: number;
}

/** The five headline figures. */
export const GOALS = {
  serialLatency: { label: 'serial latency: relay p50 ÷ (bare uWS p50 + crypto wall µs/tx), one connection', limit: 1.3, better: 'lower', item: 5 },
  serialCpu: { label: 'serial CPU: relay µs/tx ÷ (bare uWS µs/req + crypto µs/tx), one connection', limit: 1.5, better: 'lower', item: 5 },
  saturationCpu: { label: 'saturation CPU: relay µs/tx ÷ (bare uWS µs/req + crypto µs/tx), 16 connections, one core', limit: 1.15, better: 'lower', item: 5 },
  goodput256: { label: 'goodput: accepted tx/s at 256 connections ÷ at 16, one core', limit: 0.95, better: 'higher', item: 5 },
  multiCore: { label: 'two cores: accepted tx/s of the default layout ÷ relay pinned to one core, 16 connections', limit: 1.5, better: 'higher', item: 5 },
} as const satisfies Record<string, Goal>;

/** Overload, measured by the same runs. */
export const OVERLOAD_GOALS = {
  goodput1024: { label: 'goodput: accepted tx/s at 1024 connections ÷ at 16, one core', limit: 0.95, better: 'higher', item: 3 },
  goodputOpen2x: { label: 'goodput: accepted tx/s offered 2x capacity open loop ÷ capacity at 16 connections, one core', limit: 0.95, better: 'higher', item: 3 },
  shedCost: { label: 'shed answer: relay CPU µs per refused answer at 256 connections ÷ bare uWS µs/req at 256', limit: 1, better: 'lower', item: 3 },
} as const satisfies Record<string, Goal>;

export type GoalName = keyof typeof GOALS | keyof typeof OVERLOAD_GOALS;

export interface Verdict {
  value: number;
  limit: number;
  better: Better;
  /** null when the figure could not be measured in this run (see `why`). */
  met: boolean | null;
  /** The two sides of the ratio, in words and numbers. */
  why: string;
}

/** The measurements the goals need; the report's per-door data satisfies it. */
export interface GoalInputs {
  crypto: { cpuUsPerTx: number; wallUsPerTx: number };
  bare: {
    serial: { p50Us: number; cpuUsPerAnswer: number } | null;
    c16: { cpuUsPerAnswer: number } | null;
    c256: { cpuUsPerAnswer: number } | null;
  };
  pinned: {
    serial: { p50Us: number; cpuUsPerAccepted: number } | null;
    c16: { acceptedPerSec: number; cpuUsPerAccepted: number } | null;
    c256: { acceptedPerSec: number } | null;
    c1024: { acceptedPerSec: number } | null;
    open2x: { acceptedPerSec: number } | null;
  };
  defaultLayout: { c16: { acceptedPerSec: number } | null };
  /** Relay CPU µs per door shed, from the door-shed run (shedCpuUs below); null when it did not run or refused too few to tell. */
  shedCpuUs: number | null;
}

const f = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '–');

function verdict(g: Goal, num: number | undefined, den: number | undefined, why: string): Verdict {
  const value = num !== undefined && den !== undefined && den > 0 ? num / den : NaN;
  const met = Number.isFinite(value) ? (g.better === 'lower' ? value <= g.limit : value >= g.limit) : null;
  return { value, limit: g.limit, better: g.better, met, why };
}

export function evaluateGoals(d: GoalInputs): Record<GoalName, Verdict> {
  const { crypto, bare, pinned } = d;
  const serialFloor = bare.serial ? bare.serial.p50Us + crypto.wallUsPerTx : undefined;
  const serialCpuFloor = bare.serial ? bare.serial.cpuUsPerAnswer + crypto.cpuUsPerTx : undefined;
  const satFloor = bare.c16 ? bare.c16.cpuUsPerAnswer + crypto.cpuUsPerTx : undefined;
  const cap = pinned.c16?.acceptedPerSec;
  const capWhy = `${f(cap ?? NaN, 0)} tx/s at 16`;
  return {
    serialLatency: verdict(GOALS.serialLatency, pinned.serial?.p50Us, serialFloor, `${f(pinned.serial?.p50Us ?? NaN, 0)} µs ÷ (${f(bare.serial?.p50Us ?? NaN, 0)} + ${f(crypto.wallUsPerTx)}) µs`),
    serialCpu: verdict(GOALS.serialCpu, pinned.serial?.cpuUsPerAccepted, serialCpuFloor, `${f(pinned.serial?.cpuUsPerAccepted ?? NaN)} µs ÷ (${f(bare.serial?.cpuUsPerAnswer ?? NaN)} + ${f(crypto.cpuUsPerTx)}) µs`),
    saturationCpu: verdict(GOALS.saturationCpu, pinned.c16?.cpuUsPerAccepted, satFloor, `${f(pinned.c16?.cpuUsPerAccepted ?? NaN)} µs ÷ (${f(bare.c16?.cpuUsPerAnswer ?? NaN)} + ${f(crypto.cpuUsPerTx)}) µs`),
    goodput256: verdict(GOALS.goodput256, pinned.c256?.acceptedPerSec, cap, `${f(pinned.c256?.acceptedPerSec ?? NaN, 0)} tx/s at 256 ÷ ${capWhy}`),
    multiCore: verdict(GOALS.multiCore, d.defaultLayout.c16?.acceptedPerSec, cap, `${f(d.defaultLayout.c16?.acceptedPerSec ?? NaN, 0)} tx/s default layout ÷ ${f(cap ?? NaN, 0)} tx/s pinned`),
    goodput1024: verdict(OVERLOAD_GOALS.goodput1024, pinned.c1024?.acceptedPerSec, cap, `${f(pinned.c1024?.acceptedPerSec ?? NaN, 0)} tx/s at 1024 ÷ ${capWhy}`),
    goodputOpen2x: verdict(OVERLOAD_GOALS.goodputOpen2x, pinned.open2x?.acceptedPerSec, cap, `${f(pinned.open2x?.acceptedPerSec ?? NaN, 0)} tx/s accepted of 2x offered ÷ ${capWhy}`),
    shedCost: verdict(
      OVERLOAD_GOALS.shedCost,
      d.shedCpuUs ?? undefined,
      bare.c256?.cpuUsPerAnswer,
      d.shedCpuUs === null ? 'no door-shed run to tell from' : `${f(d.shedCpuUs)} µs per door shed (256 connections) ÷ ${f(bare.c256?.cpuUsPerAnswer ?? NaN)} µs per bare uWS request (256)`,
    ),
  };
}

/**
 * CPU of one refused answer in a run that refuses: what the run cost beyond
 * its accepted transactions (priced at the 16-connection run's CPU per
 * accepted tx, where almost nothing is refused) divided by the refusals.
 * bench:e2e applies it to its door-shed run (a 1 ms queue bound: nearly
 * every answer is a shed). Needs refusals to be a real share of the answers,
 * or the remainder is noise.
 */
export const MIN_SHED_SHARE = 0.05; // below 5% of answers the remainder is within run-to-run CPU noise

export function shedCpuUs(run: { cpuS: number; accepted: number; refused: number } | null, cpuUsPerAccepted: number | undefined): number | null {
  if (!run || cpuUsPerAccepted === undefined || !Number.isFinite(cpuUsPerAccepted)) return null;
  if (run.refused < MIN_SHED_SHARE * (run.refused + run.accepted)) return null;
  return Math.max(0, run.cpuS * 1e6 - run.accepted * cpuUsPerAccepted) / run.refused;
}

/**
 * The most an open-loop overload can leave for accepted transactions on one
 * core: offered `factor` x capacity, every arrival not accepted is refused,
 * and a refusal costs `shedUs` where an accepted transaction costs
 * `acceptedUs`. With g the accepted share of capacity, g + (factor - g) x
 * shedUs / acceptedUs = 1 core, so g = (1 - factor x r) / (1 - r), r =
 * shedUs / acceptedUs. Priced at a bare uWS request (the shed-cost goal's bound
 * on a shed answer), it is the ceiling the 2x open-loop goodput goal is measured
 * against: at 2x, a refusal costing 1/6 of an accepted transaction caps
 * goodput at 0.8 whatever the relay does.
 */
export function openLoopCeiling(factor: number, shedUs: number | undefined, acceptedUs: number | undefined): number {
  if (shedUs === undefined || acceptedUs === undefined || !(acceptedUs > 0) || !(shedUs >= 0)) return NaN;
  const r = shedUs / acceptedUs;
  if (r >= 1) return 1 / factor; // refusing costs as much as accepting: nothing is gained by refusing
  return Math.min(1, Math.max(0, (1 - factor * r) / (1 - r)));
}
