/**
 * Preloaded into a gateway under benchmark (`node --import alloc-probe.mjs`):
 * the first SIGUSR2 starts counting the bytes the process allocates on the
 * JavaScript heap, the second stops and prints
 * `{"allocatedBytes": N, "gc": {...}}`: the bytes, and a summary of the
 * collections in the window (the GC trace #19 asks for, without parsing
 * `--trace-gc` output): count, total and longest pause for young-generation
 * scavenges and for full (mark-compact) collections, in ms.
 *
 * Allocation = heap growth between collections, summed: for each GC in the
 * window (V8's `GCProfiler`), used-before minus used-after of the previous
 * one, plus the growth since the last. Objects allocated and collected in
 * the same window are counted, which heap snapshots would miss.
 *
 * Plain JavaScript, not TypeScript: a `.ts` preload would load Node's type
 * stripper (amaro) into a gateway that runs the image's built JavaScript,
 * and its memory would be measured as the gateway's.
 */
import { GCProfiler, getHeapStatistics } from "node:v8"

/** @type {GCProfiler | undefined} */
let profiler
let startUsed = 0

process.on("SIGUSR2", () => {
  if (profiler === undefined) {
    profiler = new GCProfiler()
    profiler.start()
    startUsed = getHeapStatistics().used_heap_size
    return
  }
  const result = profiler.stop()
  profiler = undefined
  let allocated = 0
  let previous = startUsed
  const young = { count: 0, totalMs: 0, maxMs: 0 }
  const full = { count: 0, totalMs: 0, maxMs: 0 }
  for (const gc of result?.statistics ?? []) {
    allocated += Math.max(0, gc.beforeGC.heapStatistics.usedHeapSize - previous)
    previous = gc.afterGC.heapStatistics.usedHeapSize
    // V8 reports `cost` in microseconds; the young generation's collectors are Scavenge and MinorMarkSweep
    const pauses = gc.gcType === "Scavenge" || gc.gcType === "MinorMarkSweep" ? young : full
    pauses.count++
    pauses.totalMs += gc.cost / 1000
    pauses.maxMs = Math.max(pauses.maxMs, gc.cost / 1000)
  }
  allocated += Math.max(0, getHeapStatistics().used_heap_size - previous)
  const windowMs = result === undefined ? 0 : result.endTime - result.startTime
  process.stdout.write(JSON.stringify({ allocatedBytes: allocated, gc: { windowMs, young, full } }) + "\n")
})
