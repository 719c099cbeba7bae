/**
 * The embedded store's audit journal: what makes AUDIT_DURABILITY=sync cost
 * a file append per call instead of a database commit.
 *
 * **Why**
 *
 * On PGlite a commit is a statement of a WebAssembly Postgres on the worker
 * thread: about 1.5 ms of CPU for a one-record batch (measured, issue #19),
 * waited for by every call at low concurrency and, under load, taken from
 * the cores the calls need. PGlite runs with `fsync=off`, so its commit is
 * durable once its WAL is handed to the OS: it survives the process's death
 * (kill -9, the OOM killer), not the machine's. A `writeSync` of the record
 * to a file beside the database gives the record that same guarantee, so
 * `record` waits for the append and the database is written in the
 * background, in batches, as with AUDIT_DURABILITY=async. Postgres has no
 * journal: there the commit is the durability (and a pod's disk is not).
 *
 * **Rules**
 *
 * - The journal is a directory of segments (`<chain>.<writer>.<n>.jsonl`).
 *   A segment starts with a header: the writer's chain and id, the seq the
 *   chain stood at when the writer started (`base`), the number of its first
 *   record and how many records were marked dropped before it. Then one line
 *   per record `{"j": n, "r": row}` (`j` numbers the writer's records from
 *   1) and lines `{"d": [n, ...]}` for records dropped unwritten (buffer
 *   full, refused by Postgres), all appended synchronously: a record's line
 *   is written before its `record` returns.
 * - The writer starts a new segment at every flush; a segment is deleted once
 *   every record in it is written or dropped and a newer one took over. A
 *   clean shutdown leaves none. Records are written or dropped oldest first,
 *   so segments go oldest first, and a drop is marked in a segment no older
 *   than the record's.
 * - Records reach the chain in the order they were journaled, less the
 *   dropped ones. So `last_seq - base` (what the writer wrote) less the
 *   records kept before the oldest surviving segment (its header's count less
 *   the drops marked) is how many of the surviving records are written:
 *   `recover`, at start (the data directory's lock guarantees the files are
 *   of a process that ended), returns the others, in order, for the new
 *   writer to write, and the files to delete once it has them.
 * - A segment that cannot be written (disk full, permissions) is given up:
 *   `append` says so and the record waits for its commit, as without a
 *   journal.
 *
 * **Gotchas**
 *
 * - A record Postgres refuses is marked dropped after its batch commits;
 *   should the process die between the two, the replay counts it as written
 *   and writes the last record of that batch a second time.
 * - A torn last line (the process died mid-append) is skipped: its `record`
 *   had not returned, so its call was not answered.
 * - Recovered records go into the new writer's journal before the old
 *   segments are deleted. Without a journal to take them (AUDIT_DURABILITY=
 *   async, or a journal that cannot be written) they are flushed first, and
 *   should that flush fail the old segments stay: the records are still
 *   written from the buffer, and a later start writes them a second time.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { HASHED, type InsertRow } from "./AuditRows.ts"

/** A segment file and the records in it not yet written or dropped. */
export interface Segment {
  readonly path: string
  pending: number
  /** No more records are appended (a newer segment took over). */
  closed: boolean
}

export interface AuditJournal {
  /** Appends record `jid`; its segment, or undefined when it could not be journaled (wait for the commit). */
  readonly append: (jid: number, row: InsertRow) => Segment | undefined
  /** Marks records dropped unwritten (so a replay skips them). */
  readonly dropped: (jids: ReadonlyArray<number>) => void
  /** One record of `segment` is written or dropped; the segment goes once it has none left and is closed. */
  readonly settle: (segment: Segment) => void
  /** Later records go to a new segment. */
  readonly rotate: () => void
  /** Closes the current segment (deleted if every record in it is settled). */
  readonly close: () => void
}

/** `chain` as a file name. */
const fileStem = (chain: string) => chain.replace(/[^A-Za-z0-9._-]/g, "_")

/**
 * The journal of `chain` in `dir`, created if needed. `base`: the chain's seq when the writer starts.
 * `onFailure` is told once when a segment cannot be written.
 */
export const open = (
  options: { readonly dir: string; readonly chain: string; readonly base: number },
  onFailure: (error: unknown) => void
): AuditJournal => {
  const { base, chain, dir } = options

  const writer = randomUUID().slice(0, 8)
  let number = 0
  let lastJid = 0
  let droppedTotal = 0
  let current: Segment | undefined
  let fd: number | undefined
  let failed = false

  const unlink = (segment: Segment) => {
    try {
      Fs.rmSync(segment.path, { force: true })
    } catch {
      // a segment left behind is replayed against the chain's head: nothing is written twice
    }
  }

  const closeCurrent = () => {
    if (fd !== undefined) Fs.closeSync(fd)
    fd = undefined
    if (current !== undefined) {
      current.closed = true
      if (current.pending === 0) unlink(current)
    }
    current = undefined
  }

  /** Writes `line` to the current segment (started if needed); false if it could not. */
  const write = (line: string): boolean => {
    if (failed) return false
    try {
      if (fd === undefined) {
        Fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
        // unique per writer: a writer given the chain of an ended one never appends to (or deletes) its segments
        const path = Path.join(dir, `${fileStem(chain)}.${writer}.${++number}.jsonl`)
        fd = Fs.openSync(path, "a", 0o600)
        current = { path, pending: 0, closed: false }
        const header: Header = { chain, writer, base, firstJid: lastJid + 1, droppedBefore: droppedTotal }
        Fs.writeSync(fd, JSON.stringify(header) + "\n")
      }
      // a short write (disk full) would leave half a line for the next one to run into: a failure, not a record
      if (Fs.writeSync(fd, line) !== Buffer.byteLength(line)) throw new Error("short write to the audit journal")
      return true
    } catch (error) {
      failed = true
      onFailure(error)
      return false
    }
  }

  return {
    append: (jid, row) => {
      if (!write(`{"j":${jid},"r":${JSON.stringify(row)}}\n`)) return undefined
      lastJid = jid
      current!.pending++
      return current
    },
    dropped: (jids) => {
      if (jids.length === 0) return
      write(`{"d":${JSON.stringify(jids)}}\n`)
      droppedTotal += jids.length
    },
    settle: (segment) => {
      if (--segment.pending === 0 && segment.closed) unlink(segment)
    },
    rotate: () => {
      if (current !== undefined && current.pending > 0) closeCurrent()
    },
    close: closeCurrent
  }
}

/** What a journal left by an ended process holds that its chain does not. */
export interface Recovered {
  /** The records to write, oldest first. */
  readonly rows: ReadonlyArray<InsertRow>
  /** The segment files read (delete them once `rows` are written). */
  readonly files: ReadonlyArray<string>
  /** Records to write whose line could not be read back (no object, no valid `at`): lost, to be reported. */
  readonly unreadable: number
}

/** The first line of a segment. */
interface Header {
  readonly chain: string
  readonly writer: string
  /** The chain's last seq when the writer started. */
  readonly base: number
  /** The number of the segment's first record: every record before it was journaled in an older segment. */
  readonly firstJid: number
  /** Records marked dropped before the segment started (all numbered before `firstJid`). */
  readonly droppedBefore: number
}

const isHeader = (line: Record<string, unknown>): line is Record<string, unknown> & Header =>
  typeof line.chain === "string" && typeof line.writer === "string" && typeof line.base === "number" &&
  typeof line.firstJid === "number" && typeof line.droppedBefore === "number"

/** What one writer's surviving segments hold. */
interface WriterJournal {
  readonly chain: string
  readonly base: number
  /** The header of its oldest surviving segment. */
  oldest: Header
  /** By number; null: a record whose line could not be read back (it still counts in the chain's order). */
  readonly records: Map<number, InsertRow | null>
  readonly dropped: Set<number>
}

/**
 * The row a journal line holds, with the table's columns only (a field the table lacks would fail every
 * batch, not just its own row); undefined when it has no object or no valid `at`. A value of the wrong type
 * is left for Postgres to refuse: that row is dropped alone (`AuditChainWriter`).
 */
const reviveRow = (value: unknown): InsertRow | undefined => {
  if (typeof value !== "object" || value === null) return undefined
  const stored = value as Record<string, unknown>
  const at = typeof stored.at === "string" ? new Date(stored.at) : undefined
  if (at === undefined || Number.isNaN(at.getTime())) return undefined
  const row: Record<string, unknown> = {}
  for (const column of HASHED) row[column] = stored[column] ?? null
  row.at = at
  return row as unknown as InsertRow
}

/** Reads every segment in `dir` (none: nothing) and keeps, per chain, the records its head does not cover. */
export const recover = <E, R>(
  dir: string,
  lastSeq: (chain: string) => Effect.Effect<number | undefined, E, R>
): Effect.Effect<Recovered, E, R> =>
  Effect.gen(function*() {
    let names: Array<string>
    try {
      names = Fs.readdirSync(dir).filter((name) => name.endsWith(".jsonl"))
    } catch {
      return { rows: [], files: [], unreadable: 0 }
    }
    const writers = new Map<string, WriterJournal>()
    const files: Array<string> = []
    for (const name of names) {
      const path = Path.join(dir, name)
      files.push(path)
      let text: string
      try {
        text = Fs.readFileSync(path, "utf8")
      } catch {
        continue
      }
      let journal: WriterJournal | undefined
      for (const line of text.split("\n")) {
        let parsed: Record<string, unknown>
        try {
          parsed = JSON.parse(line) as Record<string, unknown>
        } catch {
          continue // empty, or torn by the process's death mid-append
        }
        if (journal === undefined && isHeader(parsed)) {
          journal = writers.get(parsed.writer)
          if (journal === undefined) {
            journal = { chain: parsed.chain, base: parsed.base, oldest: parsed, records: new Map(), dropped: new Set() }
            writers.set(parsed.writer, journal)
          } else if (parsed.firstJid < journal.oldest.firstJid) {
            journal.oldest = parsed
          }
        } else if (journal !== undefined && typeof parsed.j === "number") {
          journal.records.set(parsed.j, reviveRow(parsed.r) ?? null)
        } else if (journal !== undefined && Array.isArray(parsed.d)) {
          for (const jid of parsed.d) if (typeof jid === "number") journal.dropped.add(jid)
        }
      }
    }
    const rows: Array<InsertRow> = []
    let unreadable = 0
    for (const journal of writers.values()) {
      // records the writer wrote (its chain's head), less those before its oldest surviving segment
      const written = ((yield* lastSeq(journal.chain)) ?? journal.base) - journal.base
      const { droppedBefore, firstJid } = journal.oldest
      let before = firstJid - 1 - droppedBefore
      for (const jid of journal.dropped) if (jid < firstJid) before--
      const kept = [...journal.records.keys()].filter((jid) => !journal.dropped.has(jid)).sort((a, b) => a - b)
      for (const jid of kept.slice(Math.max(0, written - before))) {
        const row = journal.records.get(jid)!
        if (row === null) unreadable++
        else rows.push(row)
      }
    }
    return { rows, files, unreadable }
  })
