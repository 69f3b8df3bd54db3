import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Slab, DEFAULT_SLAB_BYTES } from '../../src/tables/slab.js';

const HEADER = 16;

test('default slab is 32 MiB; alloc returns offsets into bytes with room for len', () => {
  const s = Slab.create();
  assert.equal(s.capacity, DEFAULT_SLAB_BYTES);
  const o = s.alloc(1232);
  assert.equal(o, HEADER);
  assert.equal(s.lengthOf(o), 1232);
  assert.equal(s.view(o).length, 1232);
  assert.equal(s.used, HEADER + 1232);
});

test('frees out of order: the tail moves only when the oldest block is freed, then over every freed block', () => {
  const s = Slab.create({ capacity: 1024 });
  const a = s.alloc(100);
  const b = s.alloc(100);
  const c = s.alloc(100);
  const size = HEADER + 104;
  assert.equal(s.used, 3 * size);
  s.free(b);
  assert.equal(s.used, 3 * size, 'b is behind the live a');
  s.free(a);
  assert.equal(s.used, size, 'a and b reclaimed together');
  s.free(c);
  assert.equal(s.used, 0);
  assert.equal(s.live, 0);
});

test('wrap-around: a block that does not fit before the end goes to offset 0, never straddling', () => {
  const s = Slab.create({ capacity: 1024 });
  const a = s.alloc(400); // [0, 416)
  const b = s.alloc(400); // [416, 832)
  s.free(a);
  const c = s.alloc(300); // 192 bytes left at the end: wraps to [0, 320)
  assert.equal(c, HEADER);
  assert.equal(s.used, 416 + 192 + 320, 'the skipped end counts until the tail passes it');
  assert.equal(s.alloc(100), -1, 'between head 320 and tail 416 only 96 bytes are free');
  s.free(b);
  assert.equal(s.used, 320);
  const d = s.alloc(600);
  assert.equal(d, 320 + HEADER);
  s.free(c);
  s.free(d);
  assert.equal(s.used, 0);
});

test('full -> -1, and an empty slab restarts at 0 so any block up to capacity fits', () => {
  const s = Slab.create({ capacity: 256 });
  const offs: number[] = [];
  for (;;) {
    const o = s.alloc(40);
    if (o < 0) break;
    offs.push(o);
  }
  assert.equal(offs.length, Math.floor(256 / 56));
  assert.equal(s.alloc(24), -1, '32 bytes left at the end, nothing freed at the start');
  for (const o of offs.reverse()) s.free(o);
  assert.equal(s.alloc(256 - HEADER), HEADER);
  assert.equal(s.alloc(0), -1);
});

test('shrink() returns space at once for the newest block, and at free time otherwise', () => {
  const s = Slab.create({ capacity: 1024 });
  const a = s.alloc(500);
  const b = s.alloc(200);
  s.shrink(b, 10);
  assert.equal(s.lengthOf(b), 10);
  assert.equal(s.used, HEADER + 504 + HEADER + 16);
  s.shrink(a, 1);
  assert.equal(s.lengthOf(a), 1);
  assert.equal(s.used, HEADER + 504 + HEADER + 16, 'a is not the newest: its space waits for free');
  s.free(a);
  assert.equal(s.used, HEADER + 16);
  assert.throws(() => s.shrink(b, 11), RangeError);
});

test('misuse is caught: double free, foreign offsets, and allocation from an attached view', () => {
  const s = Slab.create({ capacity: 1024 });
  const a = s.alloc(10);
  s.alloc(10);
  s.free(a);
  assert.throws(() => s.free(a), /not a live block/);
  assert.throws(() => s.free(a + 8), /not a live block/);
  assert.throws(() => s.free(4096), /not a live block/);
  const view = Slab.attach(s.handle());
  assert.throws(() => view.alloc(1), /created the slab/);
  assert.throws(() => view.free(a), /created the slab/);
});

type Op = { kind: 'alloc'; len: number } | { kind: 'free'; pick: number } | { kind: 'shrink'; pick: number; frac: number };

test('model test: live blocks never overlap, stay inside the slab and keep their bytes; freeing all empties it', () => {
  const op = fc.oneof(
    { weight: 5, arbitrary: fc.record({ kind: fc.constant('alloc' as const), len: fc.integer({ min: 0, max: 700 }) }) },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('free' as const), pick: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('shrink' as const), pick: fc.nat(), frac: fc.double({ min: 0, max: 1, noNaN: true }) }) },
  );
  fc.assert(
    fc.property(fc.integer({ min: 64, max: 4096 }), fc.array(op, { maxLength: 200 }), (cap, ops: Op[]) => {
      const s = Slab.create({ capacity: cap });
      const live = new Map<number, { len: number; fill: number }>();
      let fill = 1;
      const check = () => {
        const spans = [...live].map(([o, b]) => [o - HEADER, o + b.len] as const).sort((x, y) => x[0] - y[0]);
        for (let i = 0; i < spans.length; i++) {
          assert.ok(spans[i]![0] >= 0 && spans[i]![1] <= s.capacity, 'inside the slab');
          if (i > 0) assert.ok(spans[i - 1]![1] <= spans[i]![0], 'no overlap');
        }
        for (const [o, b] of live) {
          assert.equal(s.lengthOf(o), b.len);
          for (let i = 0; i < b.len; i++) if (s.bytes[o + i] !== b.fill) assert.fail('block bytes overwritten');
        }
        assert.ok(s.used >= 0 && s.used <= s.capacity);
        assert.equal(s.live, live.size);
      };
      for (const o of ops) {
        if (o.kind === 'alloc') {
          const wasEmpty = live.size === 0;
          const off = s.alloc(o.len);
          if (off < 0) {
            assert.ok(!(wasEmpty && o.len + HEADER <= s.capacity), 'an empty slab fits any block up to capacity');
            continue;
          }
          const f = fill++ & 0xff || 1;
          s.bytes.fill(f, off, off + o.len);
          live.set(off, { len: o.len, fill: f });
        } else if (live.size > 0) {
          const keys = [...live.keys()];
          const off = keys[o.pick % keys.length]!;
          if (o.kind === 'free') {
            s.free(off);
            live.delete(off);
          } else {
            const b = live.get(off)!;
            b.len = Math.floor(b.len * o.frac);
            s.shrink(off, b.len);
          }
        }
        check();
      }
      for (const off of live.keys()) s.free(off);
      assert.equal(s.used, 0);
      assert.equal(s.live, 0);
    }),
    { numRuns: 500 },
  );
});

test('a zero-length block ending exactly at the slab end can be freed (its offset equals the capacity)', () => {
  const s = Slab.create({ capacity: 64 });
  const a = s.alloc(1);
  const b = s.alloc(1);
  const c = s.alloc(0);
  assert.equal(c, 64);
  for (const o of [a, b, c]) s.free(o);
  assert.equal(s.used, 0);
  assert.equal(s.live, 0);
});
