import { PGlite } from "@electric-sql/pglite"
import fs from "node:fs"
const mode = process.argv[2]
let t = performance.now()
if (mode === "dump") {
  const db = await PGlite.create()
  const dump = await db.dumpDataDir("none")
  fs.writeFileSync("/tmp/pgl-dump.tar", Buffer.from(await dump.arrayBuffer()))
  console.log("fresh create+dump", (performance.now() - t).toFixed(0))
} else {
  const bytes = fs.readFileSync("/tmp/pgl-dump.tar")
  const db = await PGlite.create({ loadDataDir: new Blob([bytes]) })
  console.log("cold from dump", (performance.now() - t).toFixed(0))
  t = performance.now()
  await db.exec("create table t (a int primary key, b text); insert into t values (1,'x')")
  console.log("first ddl", (performance.now() - t).toFixed(0))
}
