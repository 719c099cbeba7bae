/**
 * Turns a downstream HTTP response into an MCP CallToolResult.
 *
 * **Rules**
 *
 * - 2xx: the body as text content; a JSON body is also given as
 *   `structuredContent` (an object as is; any other JSON value wrapped as
 *   `{ "result": value }`, since MCP requires an object there).
 * - 4xx/5xx: `isError: true` with the status and a trimmed body
 *   (`MAX_ERROR_BODY` characters), so the model sees why without a downstream
 *   flooding the client with an error page.
 * - The JSON text is parsed once and the original text is reused as the
 *   text content: no re-serialisation.
 *
 * @since 0.1.0
 */

/** At most this many characters of a downstream error body reach the client. */
export const MAX_ERROR_BODY = 2_048

export interface ToolResult {
  readonly content: ReadonlyArray<{ readonly type: "text"; readonly text: string }>
  readonly structuredContent?: Record<string, unknown>
  readonly isError?: boolean
}

const isJson = (contentType: string | undefined): boolean =>
  contentType !== undefined && /^application\/(?:[\w.+-]+\+)?json\b/i.test(contentType.trim())

export const fromResponse = (response: {
  readonly status: number
  readonly statusText?: string
  readonly contentType: string | undefined
  readonly body: string
}): ToolResult => {
  if (response.status >= 400) {
    const trimmed = response.body.length > MAX_ERROR_BODY
      ? `${response.body.slice(0, MAX_ERROR_BODY)}… (${response.body.length - MAX_ERROR_BODY} more characters)`
      : response.body
    const reason = response.statusText ? ` ${response.statusText}` : ""
    return {
      content: [{ type: "text", text: `HTTP ${response.status}${reason}${trimmed === "" ? "" : `: ${trimmed}`}` }],
      isError: true
    }
  }
  if (isJson(response.contentType) && response.body !== "") {
    try {
      const value: unknown = JSON.parse(response.body)
      const structuredContent = typeof value === "object" && value !== null && !Array.isArray(value)
        ? value as Record<string, unknown>
        : { result: value }
      return { content: [{ type: "text", text: response.body }], structuredContent }
    } catch {
      // A body labelled JSON that is not JSON is still worth showing as text.
    }
  }
  return { content: [{ type: "text", text: response.body }] }
}
