/**
 * Answers for requests the Node server accepts before the gateway serves.
 *
 * `NodeHttpServer` listens while its layer builds (the address must be known
 * to the layers after it) but installs the router's `request` listener only
 * when `HttpRouter.serve` builds, after every service of the gateway. A
 * request accepted in that gap (or after shutdown removed the listener) has
 * no listener: Node neither answers nor closes it, so the client waits
 * forever.
 *
 * **Rules**
 *
 * - While no other `request` listener is installed, every request gets an
 *   answer at once: `GET /healthz` 200 (the process serves HTTP), anything
 *   else, `/readyz` included, 503 with `Retry-After: 1` and a JSON body saying
 *   the gateway is starting, or, once a router has been installed and
 *   removed again (shutdown), that it is stopping.
 * - Once the router's listener is installed this one stands aside, checked
 *   per request, so no request is ever answered twice or by nobody, whatever
 *   the order listeners are added or removed in.
 *
 * @since 0.1.0
 */
import type * as Http from "node:http"
import { isPreparation } from "./Hardening.ts"

const STARTING_BODY = JSON.stringify({
  status: "starting",
  reason: "The gateway is starting and does not serve requests yet; retry shortly"
})

const STOPPING_BODY = JSON.stringify({
  status: "stopping",
  reason: "The gateway is shutting down and no longer serves requests; retry (another instance may answer)"
})

/** Adds the starting-time responder to `server` and returns it. */
export const answerUntilServed = <S extends Http.Server>(server: S): S => {
  // set once another request listener (the router) has been added: without one after that, the gateway is stopping
  let served = false
  const answer = (request: Http.IncomingMessage, response: Http.ServerResponse) => {
    // the router (or any other handler) is installed: it answers (a listener that only prepares requests,
    // such as the one joining duplicate credentials, answers nothing)
    if (server.listeners("request").some((listener) => listener !== answer && !isPreparation(listener))) return
    const path = (request.url ?? "/").split("?")[0]
    if (request.method === "GET" && path === "/healthz") {
      response.writeHead(200, { "content-type": "application/json" })
      response.end(JSON.stringify({ status: "ok" }))
      return
    }
    response.writeHead(503, { "content-type": "application/json", "retry-after": "1" })
    response.end(served ? STOPPING_BODY : STARTING_BODY)
  }
  server.on("request", answer)
  server.on("newListener", (event: string | symbol, listener: unknown) => {
    if (event === "request" && !isPreparation(listener)) served = true
  })
  return server
}
