/**
 * An independent authorization server for the end-to-end OAuth tests:
 * `oidc-provider` (OpenID Certified) in this process on a loopback port, with
 * client credentials, authorization code + PKCE with dynamic client
 * registration, and RFC 8707 resource indicators issuing JWT access tokens
 * whose audience is the resource the client asked for (Janus's `/mcp` or a
 * virtual server's URL) and whose scope is `mcp:tools`.
 *
 * The PKCE login is driven headlessly through oidc-provider's development
 * interactions (a login form that accepts any user, then a consent form),
 * with plain HTTP requests and a cookie jar: `login(url)` follows the
 * authorization URL a client was sent to and answers the redirect URI it
 * ends at.
 */
import { Effect } from "effect"
import { exportJWK, generateKeyPair } from "jose"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import Provider, { errors } from "oidc-provider"

/** The pre-registered client of the client-credentials grant. */
export const CLIENT_ID = "janus-ci"
export const CLIENT_SECRET = "ci-secret-4f0e1d2c3b4a5968"

export interface AuthorizationServer {
  readonly issuer: string
  /** Follows `authorizationUrl` through login and consent; the final redirect URL (with `code`). */
  readonly login: (authorizationUrl: URL, redirectUri: string) => Promise<URL>
  /** Every path requested of this server. */
  readonly paths: Array<string>
}

/** Starts the server for the scope; `resources` says which resource indicators it issues tokens for. */
export const start = (resources: (indicator: string) => boolean) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const { privateKey } = await generateKeyPair("RS256", { extractable: true })
      const signing = { ...(await exportJWK(privateKey)), kid: "oidc-1", use: "sig", alg: "RS256" }
      const http = createServer()
      await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve))
      const issuer = `http://127.0.0.1:${(http.address() as AddressInfo).port}`
      const provider = new Provider(issuer, {
        clients: [{
          client_id: CLIENT_ID,
          client_secret: CLIENT_SECRET,
          grant_types: ["client_credentials"],
          redirect_uris: [],
          response_types: []
        }],
        jwks: { keys: [signing as never] },
        cookies: { keys: ["janus-test-cookie-key"] },
        features: {
          devInteractions: { enabled: true },
          clientCredentials: { enabled: true },
          registration: { enabled: true },
          resourceIndicators: {
            enabled: true,
            // the access token is for the resource the client named (RFC 8707), not for userinfo
            useGrantedResource: () => true,
            getResourceServerInfo: (_ctx, indicator) => {
              if (!resources(indicator)) throw new errors.InvalidTarget()
              return {
                scope: "mcp:tools",
                audience: indicator,
                accessTokenTTL: 300,
                accessTokenFormat: "jwt",
                jwt: { sign: { alg: "RS256" } }
              }
            }
          }
        },
        pkce: { required: () => true },
        // what dynamically registered clients may ask for (registration checks a client's scope against it)
        scopes: ["openid", "offline_access", "mcp:tools"]
      })
      const paths: Array<string> = []
      const callback = provider.callback()
      http.on("request", (req, res) => {
        paths.push((req.url ?? "/").split("?")[0]!)
        void callback(req, res)
      })

      const login = async (authorizationUrl: URL, redirectUri: string): Promise<URL> => {
        const jar = new Map<string, string>()
        const remember = (response: Response) => {
          for (const cookie of response.headers.getSetCookie()) {
            const [pair] = cookie.split(";")
            const eq = pair!.indexOf("=")
            jar.set(pair!.slice(0, eq), pair!.slice(eq + 1))
          }
        }
        const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join("; ")
        let url = authorizationUrl.href
        for (let step = 0; step < 12; step++) {
          const response = await fetch(url, { redirect: "manual", headers: { cookie: cookie() } })
          remember(response)
          if (response.status >= 300 && response.status < 400) {
            const next = new URL(response.headers.get("location")!, url)
            if (next.href.startsWith(redirectUri)) return next
            url = next.href
            continue
          }
          const page = await response.text()
          const prompt = /name="prompt" value="(\w+)"/.exec(page)?.[1]
          if (response.status !== 200 || prompt === undefined) {
            throw new Error(`unexpected answer ${response.status} at ${url}: ${page.slice(0, 300)}`)
          }
          const submitted = await fetch(url, {
            method: "POST",
            redirect: "manual",
            headers: { cookie: cookie(), "content-type": "application/x-www-form-urlencoded" },
            body: new URLSearchParams({ prompt, login: "ada", password: "any" }).toString()
          })
          remember(submitted)
          url = new URL(submitted.headers.get("location")!, url).href
        }
        throw new Error("the login did not reach the redirect URI")
      }

      return {
        server: { issuer, login, paths } satisfies AuthorizationServer,
        close: () =>
          new Promise<void>((resolve) => {
            http.closeAllConnections()
            http.close(() => resolve())
          })
      }
    }),
    ({ close }) => Effect.promise(close)
  ).pipe(Effect.map(({ server }) => server))
