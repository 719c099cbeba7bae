import { describe, expect, it } from "vitest"
import { endpointBody, endpointDraftOf, serverBody, serverDraftOf } from "../src/drafts.ts"

const endpoint = {
  id: "e1",
  connectionId: "c1",
  name: "get_pet",
  description: "One pet",
  method: "GET",
  pathTemplate: "/pets/{id}",
  arguments: { id: "path" },
  inputSchema: { type: "object", required: ["id"], properties: { id: { type: "string" } } },
  idempotent: true,
  version: 3
}

describe("endpoint drafts", () => {
  it("round-trips an endpoint as read into the same PUT body", () => {
    expect(endpointBody(endpointDraftOf(endpoint), endpoint)).toEqual({
      connectionId: "c1",
      name: "get_pet",
      description: "One pet",
      method: "GET",
      pathTemplate: "/pets/{id}",
      inputSchema: endpoint.inputSchema,
      arguments: { id: "path" }
    })
  })

  it("keeps an idempotent flag chosen against its method's default, and lets a default one follow the method", () => {
    const post = { ...endpoint, method: "POST", idempotent: true }
    expect(endpointBody(endpointDraftOf(post), post).idempotent).toBe(true)
    const get = { ...endpoint, method: "GET", idempotent: false }
    expect(endpointBody(endpointDraftOf(get), get).idempotent).toBe(false)
    // GET's default (true): changing the method to POST must not carry it over
    expect(endpointBody({ ...endpointDraftOf(endpoint), method: "POST" }, endpoint)).not.toHaveProperty("idempotent")
    expect(endpointBody(endpointDraftOf(endpoint))).not.toHaveProperty("idempotent")
  })

  it("keeps the output schema it does not edit", () => {
    const typed = { ...endpoint, outputSchema: { type: "object", properties: { id: { type: "string" } } } }
    expect(endpointBody(endpointDraftOf(typed), typed).outputSchema).toEqual(typed.outputSchema)
    expect(endpointBody(endpointDraftOf(endpoint), { ...endpoint, outputSchema: null })).not.toHaveProperty(
      "outputSchema"
    )
  })

  it("throws on JSON text that does not parse", () => {
    expect(() => endpointBody({ ...endpointDraftOf(endpoint), args: "{id:" })).toThrow(SyntaxError)
  })
})

describe("virtual server drafts", () => {
  const server = { id: "s1", name: "pets", description: "", tools: ["get_pet", "up/*"], bareNames: true, version: 1 }

  it("lists tools comma separated and splits them back, dropping blanks", () => {
    const draft = serverDraftOf(server)
    expect(draft.tools).toBe("get_pet, up/*")
    expect(serverBody({ ...draft, tools: " get_pet ,, showPet, " }).tools).toEqual(["get_pet", "showPet"])
  })

  it("keeps bareNames on an edit, which the form does not show", () => {
    expect(serverBody(serverDraftOf(server), server)).toEqual({
      name: "pets",
      description: "",
      tools: ["get_pet", "up/*"],
      bareNames: true
    })
    expect(serverBody(serverDraftOf(server))).not.toHaveProperty("bareNames")
  })
})
