// The read-ahead worker (src/web/worker/read_ahead.rs): started by the worker
// that decodes an image when the page is cross-origin isolated, it reads
// the image asynchronously (Blob.slice + arrayBuffer, several reads in
// flight) into slots of a SharedArrayBuffer while the decoding worker works
// on what came before; that worker waits on a slot with Atomics.wait.
//
// The buffer: Int32 words at the front (word 0: 1 once this worker runs;
// slot i's state at word 8 + 2i: 1 asked for, 2 read, 3 failed; the bytes
// read at word 9 + 2i), the slots' bytes from `dataStart` on, `slotSize`
// each. Messages: first { blob, sab, dataStart, slotSize }, then
// [slot, offset, length] for each read.
'use strict';

let blob = null;
let words = null;
let bytes = null;
let dataStart = 0;
let slotSize = 0;

async function read(slot, offset, length) {
  const state = 8 + 2 * slot;
  try {
    const ab = await blob.slice(offset, offset + length).arrayBuffer();
    const n = Math.min(ab.byteLength, slotSize);
    bytes.set(new Uint8Array(ab, 0, n), dataStart + slot * slotSize);
    Atomics.store(words, state + 1, n);
    Atomics.store(words, state, 2);
  } catch (e) {
    Atomics.store(words, state, 3);
  }
  Atomics.notify(words, state);
}

self.onmessage = (e) => {
  const m = e.data;
  if (Array.isArray(m)) {
    if (blob !== null) read(m[0], m[1], m[2]);
    return;
  }
  blob = m.blob;
  words = new Int32Array(m.sab, 0, 8 + 2 * 64);
  bytes = new Uint8Array(m.sab);
  dataStart = m.dataStart;
  slotSize = m.slotSize;
  Atomics.store(words, 0, 1);
  Atomics.notify(words, 0);
};
