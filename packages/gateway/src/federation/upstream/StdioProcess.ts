/**
 * The program of a stdio upstream: checked, spawned under
 * `stdio-supervisor.ts`, and stopped with its whole process group.
 *
 * **Rules**
 *
 * - The command must be allowed by `JANUS_STDIO_COMMANDS` (storage's
 *   `StdioAllowList`, checked again here: a connection stored under another
 *   list is not run); the error names the variable.
 * - A bare name is looked up on the gateway's own PATH (never the
 *   connection's `env`); an absolute path must be an executable file.
 * - The connection's `env` must follow storage's `StdioEnvironment` rule,
 *   checked again here (a connection stored under an older rule is not
 *   run): no variable that changes how programs, loaders or interpreters
 *   behave (`NODE_OPTIONS`, `BASH_ENV`, `LD_*`, `PATH`, ...); the error
 *   names the variable.
 * - The program's environment is a minimal one taken from the gateway's
 *   (PATH, HOME, USER, LOGNAME, SHELL, TERM, LANG, LC_ALL, TZ, TMPDIR) plus
 *   the connection's `env`, whose `{ secret }` values come from the secret
 *   cache; nothing else of the gateway's environment (database URL, master
 *   key) reaches the program.
 * - The supervisor (Janus's own `node`) runs with a fixed environment
 *   ({@link SUPERVISOR_ENV}, empty: no `NODE_OPTIONS`, no `NODE_PATH`, none
 *   of the gateway's or the connection's variables), no node options, and
 *   the gateway's working directory. The program's environment and working
 *   directory reach it as one message on a pipe (fd 4), which it applies to
 *   the program it spawns only; no connection can change how the
 *   supervisor itself starts.
 * - `cwd` must be an accessible directory.
 * - Stopping (the scope closing: drain, exit, a changed or removed
 *   connection, a lost session) sends SIGTERM to the process group and
 *   SIGKILL after `STOP_GRACE`. If the gateway dies without stopping it, the
 *   supervisor sees its lifeline (fd 3) close and stops the group itself.
 * - stderr is logged line by line at info level with the connection's name,
 *   scrubbed: the secret values given in `env` are replaced by `[secret]`,
 *   control characters removed, lines cut to `MAX_LOG_LINE` characters, at
 *   most `MAX_LOG_LINES` lines a minute (the rest counted, not logged).
 *
 * @since 0.1.0
 */
import { SecretCache, StdioAllowList, type StdioCommand, StdioEnvironment } from "@janus/storage"
import { type Cause, Deferred, Duration, Effect, Queue, Redacted, type Scope, Stream } from "effect"
import * as ChildProcess from "effect/process/ChildProcess"
import type { ChildProcessSpawner } from "effect/process/ChildProcessSpawner"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { InjectedSecrets } from "../../redaction/InjectedSecrets.ts"
import { UpstreamError } from "../Errors.ts"
import * as Wire from "./Wire.ts"

/** How long the program may take to stop after SIGTERM before its group gets SIGKILL. */
export const STOP_GRACE = Duration.seconds(3)
/** Longest stderr line logged (the rest is cut). */
export const MAX_LOG_LINE = 1_000
/** stderr lines logged per program and minute: a program printing in a loop cannot flood the log. */
export const MAX_LOG_LINES = 120
/** Messages queued for the program's stdin before a writer waits. */
const STDIN_QUEUE = 1_024

/** The line the supervisor writes to stderr once the program runs (see `stdio-supervisor.ts`). */
const PID_LINE = "janus-stdio-supervisor: program pid "

// .ts from source, .js from the image's build (`npm run build:dist`)
const SUPERVISOR = fileURLToPath(
  new URL(`./stdio-supervisor${import.meta.url.endsWith(".js") ? ".js" : ".ts"}`, import.meta.url)
)

/**
 * The supervisor's whole environment: none. Node reads `NODE_OPTIONS` (code to load before the script),
 * `NODE_PATH` and more from it, so nothing a connection or the gateway's own environment holds goes there.
 */
export const SUPERVISOR_ENV: Readonly<Record<string, string>> = Object.freeze({})

/** Variables of the gateway's environment a program gets (as the SDKs' stdio clients do). */
const INHERITED = ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "TZ", "TMPDIR"]

/** What the supervisor reads on fd 4 and applies to the program alone. */
export interface SupervisorSetup {
  readonly env: Readonly<Record<string, string>>
  readonly cwd: string | null
}

export interface StdioProcess {
  /** The program's pid once the supervisor reported it. */
  readonly pid: () => number | undefined
  /** Writes one message (a line) to the program's stdin. */
  readonly write: (line: string) => Effect.Effect<void>
  /** The program's stdout. */
  readonly stdout: Stream.Stream<Uint8Array, UpstreamError>
  /** Resolves when the program has exited, with how ("exited with code 1", and its last stderr line). */
  readonly exited: Effect.Effect<string>
  /** The secret values given in its environment, to scrub from what it writes on stdout. */
  readonly injected: InjectedSecrets
}

const isExecutableFile = (path: string): boolean => {
  try {
    Fs.accessSync(path, Fs.constants.X_OK)
    return Fs.statSync(path).isFile()
  } catch {
    return false
  }
}

/** The absolute path of `command`: itself when absolute, else the first executable of that name on PATH. */
export const resolveExecutable = (command: string, path = process.env.PATH ?? ""): string | undefined => {
  if (command.startsWith("/")) return isExecutableFile(command) ? command : undefined
  for (const dir of path.split(Path.delimiter)) {
    if (dir === "" || !Path.isAbsolute(dir)) continue
    const candidate = Path.join(dir, command)
    if (isExecutableFile(candidate)) return candidate
  }
  return undefined
}

/** Removes secret values and control characters from a stderr line, and bounds it. */
export const scrub = (line: string, secrets: ReadonlyArray<string>): string => {
  let out = line
  for (const secret of secrets) {
    if (secret.length >= 4) out = out.split(secret).join("[secret]")
  }

  out = out.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, "")
  return out.length > MAX_LOG_LINE ? `${out.slice(0, MAX_LOG_LINE)}…` : out
}

/** Starts the program of `command` for connection `name`; it is stopped when the scope closes. */
export const spawn = (
  name: string,
  command: StdioCommand,
  limit: number
): Effect.Effect<StdioProcess, UpstreamError, Scope.Scope | SecretCache | ChildProcessSpawner> =>
  Effect.gen(function*() {
    const refused = (detail: string) => new UpstreamError({ connection: name, kind: "refused", detail })
    const allowList = yield* StdioAllowList
    if (!allowList.allows(command.command)) {
      return yield* refused(`the command ${JSON.stringify(command.command)} is refused: expected ${allowList.expected}`)
    }
    const executable = resolveExecutable(command.command)
    if (executable === undefined) {
      return yield* refused(
        command.command.startsWith("/")
          ? `${command.command} is not an executable file`
          : `${JSON.stringify(command.command)} was not found on the gateway's PATH`
      )
    }
    const refusedName = StdioEnvironment.firstRefused(command.env)
    if (refusedName !== undefined) {
      return yield* refused(
        `env.${JSON.stringify(refusedName).slice(1, 101)} is refused: expected ${StdioEnvironment.EXPECTED}`
      )
    }
    if (command.cwd !== null && !Fs.existsSync(command.cwd)) {
      return yield* refused(`the working directory ${command.cwd} does not exist`)
    }
    const secrets = yield* SecretCache
    const env: Record<string, string> = {}
    for (const key of INHERITED) {
      const value = process.env[key]
      if (value !== undefined) env[key] = value
    }
    const secretValues: Array<string> = []
    for (const [key, value] of Object.entries(command.env)) {
      if (typeof value === "string") {
        env[key] = value
        continue
      }
      const revealed = yield* secrets.reveal(value.secret).pipe(
        Effect.mapError((error) =>
          refused(
            error._tag === "SecretNotFound"
              ? `the secret ${JSON.stringify(value.secret)} named by env.${key} does not exist`
              : `the secret ${JSON.stringify(value.secret)} named by env.${key} cannot be read (${error._tag})`
          )
        )
      )
      env[key] = Redacted.value(revealed)
      secretValues.push(Redacted.value(revealed))
    }

    const handle = yield* ChildProcess.make(process.execPath, [SUPERVISOR, executable, ...command.args], {
      env: { ...SUPERVISOR_ENV },
      extendEnv: false,
      cwd: process.cwd(),
      detached: true,
      killSignal: "SIGTERM",
      forceKillAfter: STOP_GRACE,
      additionalFds: { fd3: { type: "input" }, fd4: { type: "input" } }
    }).pipe(
      Effect.mapError((error) => refused(`the program could not be started (${error.message.slice(0, 200)})`))
    )
    // the program's setup: one message on fd 4, closed after it (see `stdio-supervisor.ts`)
    const setup: SupervisorSetup = { env, cwd: command.cwd }
    yield* Stream.make(new TextEncoder().encode(JSON.stringify(setup))).pipe(
      Stream.run(handle.getInputFd(4)),
      Effect.ignore,
      Effect.forkScoped
    )

    // stdin: one writer fiber, fed by a bounded queue
    const input = yield* Queue.bounded<Uint8Array, Cause.Done>(STDIN_QUEUE)
    const encoder = new TextEncoder()
    yield* Stream.fromQueue(input).pipe(Stream.run(handle.stdin), Effect.ignore, Effect.forkScoped)
    // the lifeline: a pipe the supervisor watches, never written; it closes when this process ends
    yield* Stream.never.pipe(Stream.run(handle.getInputFd(3)), Effect.ignore, Effect.forkScoped)

    // stderr: logged, scrubbed, rate-limited; the supervisor's pid line is read, not logged
    const pid = yield* Deferred.make<number>()
    let programPid: number | undefined
    let lastLine: string | undefined
    let windowStart = Date.now()
    let logged = 0
    let dropped = 0
    yield* Wire.readLines(name, handle.stderr, limit, (raw) =>
      Effect.suspend(() => {
        if (programPid === undefined && raw.startsWith(PID_LINE)) {
          const value = Number(raw.slice(PID_LINE.length))
          if (Number.isSafeInteger(value)) {
            programPid = value
            return Effect.as(Deferred.succeed(pid, value), true)
          }
        }
        const line = scrub(raw, secretValues)
        lastLine = line
        const now = Date.now()
        if (now - windowStart >= 60_000) {
          const note = dropped > 0 ? ` (${dropped} more stderr lines were not logged)` : ""
          windowStart = now
          logged = 0
          dropped = 0
          if (note !== "") lastLine = line
          if (note !== "") return Effect.as(Effect.logInfo(`upstream ${name}${note}`), true)
        }
        if (logged >= MAX_LOG_LINES) {
          dropped++
          return Effect.succeed(true)
        }
        logged++
        return Effect.as(Effect.logInfo(line).pipe(Effect.annotateLogs({ upstream: name, stream: "stderr" })), true)
      })).pipe(Effect.ignore, Effect.forkScoped)

    const exitCode = yield* Deferred.make<string>()
    yield* handle.exitCode.pipe(
      Effect.map((code) => {
        // the supervisor exits with 128 + n when the program was killed by signal n
        const signal = code > 128 && code < 128 + 64
          ? Object.entries(Os.constants.signals).find(([, n]) => n === code - 128)?.[0]
          : undefined
        return code === 127
          ? "the program could not be started (exit code 127)"
          : signal !== undefined
          ? `the program exited: killed by ${signal}`
          : `the program exited with code ${code}`
      }),
      Effect.catch(() => Effect.succeed("the program was stopped")),
      Effect.flatMap((how) => Deferred.succeed(exitCode, how)),
      Effect.forkScoped
    )
    // the pid line arrives at once; a program that fails to start reports through its exit instead
    yield* Deferred.await(pid).pipe(Effect.timeoutOption("5 seconds"), Effect.asVoid)

    return {
      injected: InjectedSecrets.fromSecrets(secretValues),
      pid: () => programPid,
      write: (line) => Effect.asVoid(Queue.offer(input, encoder.encode(`${line}\n`))),
      stdout: handle.stdout.pipe(
        Stream.mapError(() =>
          new UpstreamError({ connection: name, kind: "unavailable", detail: "the program's stdout broke off" })
        )
      ),
      exited: Effect.map(
        Deferred.await(exitCode),
        (how) => lastLine === undefined ? how : `${how}; its last stderr line: ${lastLine.slice(0, 300)}`
      )
    } satisfies StdioProcess
  })
