/**
 * The conformance server (`conformance-server.ts`) as a stdio program, for
 * the stdio runs of the conformance scenarios through Janus:
 * `node test/federation/conformance-stdio.ts` (Node strips the types).
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { makeServer } from "./conformance-server.ts"

await makeServer().connect(new StdioServerTransport())
