/**
 * Where documents come from: a file, every document file of a directory,
 * or text already read (stdin, a request body).
 *
 * **Rules**
 *
 * - A directory contributes its `*.yaml`, `*.yml` and `*.json` files, in
 *   name order, not recursing; names starting with `.` are skipped (a
 *   Kubernetes ConfigMap volume keeps its versions in `..data` and
 *   `..<timestamp>` directories, with each key a symlink beside them, which
 *   is followed). The files make one document (`Document.decode`); each
 *   problem names its file.
 * - `digest` identifies what was read (names and contents): the same files
 *   give the same digest, so a watcher applies only what changed.
 *
 * @since 0.1.0
 */
import { Effect, FileSystem, Path, Schema } from "effect"
import { createHash } from "node:crypto"
import { type Configuration, type ConfigurationInvalid, decode, invalid, parseText, type Part } from "./Document.ts"

/** A path that cannot be read as a document or a directory of documents. */
export class ConfigurationSourceError extends Schema.TaggedError<ConfigurationSourceError>()(
  "ConfigurationSourceError",
  { path: Schema.String, reason: Schema.String }
) {
  override get message(): string {
    return `cannot read the configuration document ${this.path}: ${this.reason}`
  }
}

/** What was read: the document, and a digest of the files it came from. */
export interface Loaded {
  readonly configuration: Configuration
  readonly digest: string
  /** The files read, for messages. */
  readonly files: ReadonlyArray<string>
}

const DOCUMENT_FILE = /\.(ya?ml|json)$/i

const reasonOf = (error: { readonly message: string }) => {
  const text = error.message
  if (/ENOENT|NotFound/i.test(text)) return "no such file or directory"
  if (/EACCES|PermissionDenied/i.test(text)) return "permission denied"
  return text.slice(0, 200)
}

/** Parses and decodes texts read from `files` (name, text pairs). */
export const fromTexts = (
  files: ReadonlyArray<readonly [name: string | undefined, text: string]>
): Effect.Effect<Loaded, ConfigurationInvalid> =>
  Effect.gen(function*() {
    const parts: Array<Part> = []
    const problems: Array<ConfigurationInvalid> = []
    for (const [name, text] of files) {
      const parsed = yield* Effect.result(parseText(text, name))
      if (parsed._tag === "Success") parts.push(...parsed.success)
      else problems.push(parsed.failure)
    }
    if (problems.length > 0) return yield* Effect.fail(invalid(problems.flatMap((p) => p.problems)))
    const hash = createHash("sha256")
    for (const [name, text] of files) hash.update(`${name ?? ""}\0${text}\0`)
    return {
      configuration: yield* decode(parts),
      digest: hash.digest("hex").slice(0, 32),
      files: files.flatMap(([name]) => name === undefined ? [] : [name])
    }
  })

/** The document at `path`: one file, or the document files of a directory. */
export const load = (
  path: string
): Effect.Effect<Loaded, ConfigurationInvalid | ConfigurationSourceError, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const paths = yield* Path.Path
    const failed = (at: string) => (error: { readonly message: string }) =>
      new ConfigurationSourceError({ path: at, reason: reasonOf(error) })
    const info = yield* Effect.mapError(fs.stat(path), failed(path))
    let names: ReadonlyArray<string> = [path]
    if (info.type === "Directory") {
      const entries = yield* Effect.mapError(fs.readDirectory(path), failed(path))
      names = entries.filter((name) => !name.startsWith(".") && DOCUMENT_FILE.test(name)).sort().map((name) =>
        paths.join(path, name)
      )
      if (names.length === 0) {
        return yield* new ConfigurationSourceError({
          path,
          reason: "the directory has no .yaml, .yml or .json file"
        })
      }
    }
    const files = yield* Effect.forEach(
      names,
      (name) => Effect.map(Effect.mapError(fs.readFileString(name), failed(name)), (text) => [name, text] as const)
    )
    return yield* fromTexts(files)
  })
