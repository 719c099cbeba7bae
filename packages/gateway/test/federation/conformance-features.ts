/**
 * The resources, resource templates, prompts and completions the official
 * conformance scenarios `resources-*`, `prompts-*` and `completion-complete`
 * ask a server for (as the suite's own everything-server has them),
 * registered on an SDK v1 or v2 `McpServer` (their registration API is the
 * same). Plain JavaScript apart from types, so the stdio fixture runs it
 * under Node's type stripping.
 */
import { z } from "zod"

// a 1x1 red PNG
export const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

// the v1 and v2 servers' registration methods, as far as this module uses them
interface Registrar {
  registerResource(name: string, uri: unknown, config: object, read: (...args: Array<any>) => unknown): unknown
  registerPrompt(name: string, config: object, get: (...args: Array<any>) => unknown): unknown
}

export interface Sdk {
  readonly ResourceTemplate: new(template: string, callbacks: { list: undefined; complete?: object }) => unknown
  readonly completable: (schema: any, complete: (value: string) => Array<string>) => unknown
}

const CITIES = ["paris", "park", "party", "test", "testing"]

/** Registers what the scenarios read, get and complete; `tag` marks texts so two upstreams can be told apart. */
export const registerFeatures = (server: Registrar, sdk: Sdk, tag = "") => {
  server.registerResource("static-text", "test://static-text", {
    description: "A static text resource",
    mimeType: "text/plain"
  }, async (uri: URL) => ({
    contents: [{
      uri: uri.href,
      mimeType: "text/plain",
      text: `This is the content of the static text resource.${tag}`
    }]
  }))
  server.registerResource("static-binary", "test://static-binary", {
    description: "A static binary resource",
    mimeType: "image/png"
  }, async (uri: URL) => ({ contents: [{ uri: uri.href, mimeType: "image/png", blob: PNG }] }))
  server.registerResource("watched-resource", "test://watched-resource", {
    description: "A resource clients subscribe to",
    mimeType: "text/plain"
  }, async (uri: URL) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: `watched${tag}` }] }))
  server.registerResource(
    "template",
    new sdk.ResourceTemplate("test://template/{id}/data", {
      list: undefined,
      complete: { id: (value: string) => ["123", "456"].filter((id) => id.startsWith(value)) }
    }),
    { description: "A resource template", mimeType: "application/json" },
    async (uri: URL, variables: Record<string, string>) => ({
      contents: [{
        uri: uri.href,
        mimeType: "application/json",
        text: JSON.stringify({ id: variables.id, templateTest: true, data: `Data for ID: ${variables.id}${tag}` })
      }]
    })
  )
  // not a scenario's: a read that takes 1.5 s (concurrency tests)
  server.registerResource("slow", "test://slow", { description: "Answers after 1.5 s", mimeType: "text/plain" }, async (
    uri: URL
  ) => {
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    return { contents: [{ uri: uri.href, mimeType: "text/plain", text: `slow${tag}` }] }
  })
  server.registerPrompt("test_simple_prompt", { description: "A simple prompt without arguments" }, async () => ({
    messages: [{ role: "user", content: { type: "text", text: `This is a simple prompt for testing.${tag}` } }]
  }))
  server.registerPrompt("test_prompt_with_arguments", {
    description: "A prompt with arguments",
    argsSchema: {
      arg1: sdk.completable(
        z.string().describe("First test argument"),
        (value) => CITIES.filter((city) => city.startsWith(value))
      ),
      arg2: z.string().describe("Second test argument")
    }
  }, async ({ arg1, arg2 }: { arg1: string; arg2: string }) => ({
    messages: [{
      role: "user",
      content: { type: "text", text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` }
    }]
  }))
  server.registerPrompt("test_prompt_with_embedded_resource", {
    description: "A prompt with an embedded resource",
    argsSchema: { resourceUri: z.string().describe("URI of the resource to embed") }
  }, async ({ resourceUri }: { resourceUri: string }) => ({
    messages: [
      {
        role: "user",
        content: {
          type: "resource",
          resource: { uri: resourceUri, mimeType: "text/plain", text: "Embedded resource content for testing." }
        }
      },
      { role: "user", content: { type: "text", text: "Please process the embedded resource above." } }
    ]
  }))
  server.registerPrompt("test_prompt_with_image", { description: "A prompt with an image" }, async () => ({
    messages: [
      { role: "user", content: { type: "image", data: PNG, mimeType: "image/png" } },
      { role: "user", content: { type: "text", text: "Please analyze the image above." } }
    ]
  }))
}
