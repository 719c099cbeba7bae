/**
 * Preloaded into a gateway under benchmark (`node --import alloc-probe.ts`):
 * the first SIGUSR2 starts counting the bytes the process allocates on the
 * JavaScript heap, the second stops and prints `{"allocatedBytes": N}`.
 *
 * Allocation = heap growth between collections, summed: for each GC in the
 * window (V8's `GCProfiler`), used-before minus used-after of the previous
 * one, plus the growth since the last. Objects allocated and collected in
 * the same window are counted, which heap snapshots would miss.
 */
import { GCProfiler, getHeapStatistics } from "node:v8"

let profiler: GCProfiler | undefined
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
  for (const gc of result?.statistics ?? []) {
    allocated += Math.max(0, gc.beforeGC.heapStatistics.usedHeapSize - previous)
    previous = gc.afterGC.heapStatistics.usedHeapSize
  }
  allocated += Math.max(0, getHeapStatistics().used_heap_size - previous)
  process.stdout.write(JSON.stringify({ allocatedBytes: allocated }) + "\n")
})
