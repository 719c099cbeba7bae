/**
 * Text a client chose (a tool name, a resource URI, a prompt name, a method),
 * as the gateway repeats it: bounded, so that what one request sends is not
 * multiplied into every audit row, call event, error message and log line
 * the request causes.
 *
 * **Rules**
 *
 * - A long value is cut to its bound with a marker that says so and how long
 *   the value was (`…[cut: 12000 characters]`); the result never exceeds the
 *   bound and is never cut inside a surrogate pair, so it stays valid text.
 *   A value within its bound is returned as it is (the same string).
 * - Audit records and call events keep {@link MAX_RECORDED} characters of a
 *   name: the attempt is still recorded, only the name is bounded.
 * - Error messages and error `data` echo {@link MAX_ECHOED} characters of a
 *   client's value.
 * - Metric labels never take a client's value at all: only catalog names
 *   (see `Metrics.ts`), themselves bounded by {@link MAX_LABEL}.
 *
 * @since 0.1.0
 */

/**
 * Characters of a client-chosen name kept in an audit record and a `calls`
 * event. Why 512: a tool name is at most 128 characters as MCP advises, and a
 * resource label is `<connection>/<uri>`; 512 keeps every real one whole,
 * stays under storage's own 1,024-character cut (so the marker survives),
 * and keeps one call event under about 2 KiB, so Studio's 1 MiB subscriber
 * queue holds hundreds of them instead of forty 12,000-character ones.
 */
export const MAX_RECORDED = 512

/**
 * Characters of a client's value an error message or error `data` repeats.
 * Why 200: enough to recognise the value (the start of a URI, a misspelt
 * name); an error is not the place to send a 1 MB URI back.
 */
export const MAX_ECHOED = 200

/**
 * Characters of a metric label value. Why 256: labels are catalog names
 * (tool names, listed resource URIs and templates, prompt names), whole in
 * every real catalog; an upstream that lists a huge name must not make every
 * scrape carry it on each of a histogram's 19 lines.
 */
export const MAX_LABEL = 256

const isHigh = (code: number) => code >= 0xd800 && code <= 0xdbff

/** `text`, at most `max` characters: cut with a marker when longer (see the rules). */
export const cut = (text: string, max: number): string => {
  if (text.length <= max) return text
  const marker = `…[cut: ${text.length} characters]`
  let end = Math.max(0, max - marker.length)
  // never end on the first half of a surrogate pair
  if (end > 0 && isHigh(text.charCodeAt(end - 1))) end--
  return text.slice(0, end) + marker
}

/** `text` as an audit record or call event keeps it. */
export const recorded = (text: string): string => cut(text, MAX_RECORDED)

/** `text` as an error message or error `data` repeats it. */
export const echoed = (text: string): string => cut(text, MAX_ECHOED)

/** `text` as a JSON string for an error message, bounded (`"abc…[cut: 1000 characters]"`). */
export const quoted = (text: string): string => JSON.stringify(echoed(text))

/** `value` as JSON for an error message, bounded; `undefined` when it has no JSON (nothing was sent). */
export const json = (value: unknown): string | undefined => {
  const text = JSON.stringify(value)
  return text === undefined ? undefined : echoed(text)
}
