/**
 * What the endpoint and virtual server forms hold, and the request bodies
 * made from it, for a create (POST) and an edit (PUT, which replaces).
 *
 * **Rules**
 *
 * - An edit form starts from the item as read.
 * - A PUT carries every field the API would otherwise reset to its default,
 *   even one the form does not show (an endpoint's explicit `idempotent`, a
 *   server's `bareNames`).
 */

export interface EndpointDraft {
  readonly connectionId: string
  readonly name: string
  readonly description: string
  readonly method: string
  readonly pathTemplate: string
  /** JSON text, parsed on save. */
  readonly schema: string
  /** JSON text, parsed on save. */
  readonly args: string
}

/** The methods whose endpoints default to `idempotent: true` (the storage's `idempotentMethods`). */
const idempotentMethods: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"])

export const emptyEndpointDraft = (connectionId: string): EndpointDraft => ({
  connectionId,
  name: "",
  description: "",
  method: "GET",
  pathTemplate: "/",
  schema: "{\n  \"type\": \"object\",\n  \"properties\": {}\n}",
  args: "{}"
})

export const endpointDraftOf = (ep: any): EndpointDraft => ({
  connectionId: ep.connectionId,
  name: ep.name,
  description: ep.description ?? "",
  method: ep.method,
  pathTemplate: ep.pathTemplate,
  schema: JSON.stringify(ep.inputSchema ?? {}, null, 2),
  args: JSON.stringify(ep.arguments ?? {})
})

/**
 * The body for `d` (throws a `SyntaxError` on invalid JSON text). When
 * editing `original`, an `idempotent` that differs from its method's default
 * was chosen on purpose and is kept; one that was the default is left out,
 * so it follows the (possibly new) method. Its `outputSchema` (which this
 * form does not edit) is kept: a PUT without it would drop it.
 */
export const endpointBody = (
  d: EndpointDraft,
  original?: { method: string; idempotent: boolean; outputSchema?: unknown }
) => {
  const keep = original !== undefined && original.idempotent !== idempotentMethods.has(original.method)
  const outputSchema = original?.outputSchema
  return {
    connectionId: d.connectionId,
    name: d.name,
    description: d.description,
    method: d.method,
    pathTemplate: d.pathTemplate,
    inputSchema: JSON.parse(d.schema),
    arguments: JSON.parse(d.args),
    ...(outputSchema === undefined || outputSchema === null ? {} : { outputSchema }),
    ...(keep ? { idempotent: original.idempotent } : {})
  }
}

export interface ServerDraft {
  readonly name: string
  readonly description: string
  /** Tool names, comma separated. */
  readonly tools: string
}

export const emptyServerDraft: ServerDraft = { name: "", description: "", tools: "" }

export const serverDraftOf = (s: any): ServerDraft => ({
  name: s.name,
  description: s.description ?? "",
  tools: (s.tools ?? []).join(", ")
})

/** The body for `d`; an edit keeps the `bareNames` of `original`, which the form does not show. */
export const serverBody = (d: ServerDraft, original?: { bareNames: boolean }) => ({
  name: d.name,
  description: d.description,
  tools: d.tools.split(",").map((t) => t.trim()).filter((t) => t !== ""),
  ...(original !== undefined ? { bareNames: original.bareNames } : {})
})
