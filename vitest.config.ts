import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

// One project per package so `vitest run --project storage` runs one package's suite.
// Suites that need Postgres or Redis fail (not skip) when CI is set; see
// packages/storage/src/testing/Services.ts.
export default defineConfig({
  test: {
    projects: [
      ...["packages/storage", "packages/sse", "packages/studio", "packages/gateway", "deploy"].map((dir) => ({
        extends: true,
        test: {
          name: dir.split("/").pop()!,
          root: dir,
          include: ["test/**/*.test.ts"]
        }
      })),
      // `pnpm e2e:cluster`: three gateway processes behind a round-robin proxy (packages/gateway/e2e/cluster).
      // One file at a time: each starts its own Postgres, Redis and replicas, and two at once would not fit
      // a 2-core machine.
      {
        extends: true,
        test: {
          name: "cluster",
          root: "packages/gateway",
          include: ["e2e/cluster/**/*.test.ts"],
          fileParallelism: false,
          testTimeout: 90_000,
          hookTimeout: 120_000
        }
      }
    ],
    // Two test files at a time: vitest's default is one less than the cores (1 on a 2-core machine), but
    // most files spend their time waiting on sockets, child processes and timers, not on the CPU. The admin
    // and auth suites (23 files): 129 s with one worker, 74 s with two, all green.
    maxWorkers: 2,
    // in-memory test databases start from a migrated snapshot made once here
    globalSetup: [fileURLToPath(new URL("./vitest.global-setup.ts", import.meta.url))],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // In CI also a JSON report, from which .ci/run prints the plain "N passed, N failed" line.
    reporters: process.env.CI ? ["default", ["json", { outputFile: ".ci-results/vitest.json" }]] : ["default"]
  }
})
