/**
 * Studio's shell: sign-in, navigation, the one live connection and its
 * status, and the client-side routes.
 */
import { type JSX, render } from "preact"
import { useEffect, useLayoutEffect, useState } from "preact/hooks"
import { onUnauthorized, request, session } from "./api.ts"
import { connect, type LiveStatus } from "./live.ts"
import { Audit } from "./pages/Audit.tsx"
import { Configuration } from "./pages/Configuration.tsx"
import { Connections } from "./pages/Connections.tsx"
import { Import } from "./pages/Import.tsx"
import { Overview, resetStats, startStats } from "./pages/Overview.tsx"
import { Settings } from "./pages/Settings.tsx"
import { Tokens } from "./pages/Tokens.tsx"
import { Tools } from "./pages/Tools.tsx"
import { VirtualServers } from "./pages/VirtualServers.tsx"
import * as Store from "./store.ts"
import { Toasts } from "./toast.tsx"
import { describeError, Link, TextField, usePath } from "./ui.tsx"
import "./studio.css"

const routes: ReadonlyArray<readonly [string, string, () => JSX.Element]> = [
  ["/", "Overview", Overview],
  ["/connections", "Connections", Connections],
  ["/tools", "Tools", Tools],
  ["/virtual-servers", "Virtual servers", VirtualServers],
  ["/tokens", "Tokens", Tokens],
  ["/audit", "Audit", Audit],
  ["/import", "OpenAPI import", Import],
  ["/configuration", "Configuration", Configuration],
  ["/settings", "Settings", Settings]
]

const statusText: Record<LiveStatus, string> = {
  connecting: "Connecting…",
  live: "Live",
  reconnecting: "Reconnecting…",
  refused: "Live updates refused",
  closed: "Offline"
}

const SignIn = (props: { onSignIn: (token: string) => void }) => {
  const [token, setToken] = useState("")
  const [error, setError] = useState<string | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  const submit = async (e: Event) => {
    e.preventDefault()
    setBusy(true)
    setError(undefined)
    try {
      // any admin read proves the token
      await request("GET", "connections?limit=1", { token: token.trim() })
      props.onSignIn(token.trim())
    } catch (err) {
      setError(describeError(err))
    } finally {
      setBusy(false)
    }
  }
  return (
    <main class="signin">
      <form class="card" onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">Janus Studio</h1>
        <p>
          Sign in with an admin token (<code>jna_…</code>) or an OAuth access token with the admin scope.
        </p>
        <TextField label="Admin token" type="password" value={token} onInput={setToken} required error={error} />
        <button type="submit" disabled={busy || token.trim() === ""}>Sign in</button>
      </form>
    </main>
  )
}

const Shell = (props: { token: string; onSignOut: () => void }) => {
  const path = usePath()
  const [status, setStatus] = useState<LiveStatus>("connecting")
  useEffect(() => {
    const live = connect(props.token, { onFrame: Store.applyFrame, onStatus: setStatus })
    void startStats()
    return () => live.close()
  }, [props.token])
  useLayoutEffect(() => {
    // move focus to the new page's heading, so keyboard and screen-reader users land on it
    document.getElementById("page-title")?.focus()
  }, [path])
  const route = routes.find(([p]) => p === path)
  const Current = route?.[2]
  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header>
        <span class="brand">Janus Studio</span>
        <nav aria-label="Main">
          <ul>
            {routes.map(([p, label]) => (
              <li key={p}>
                <Link href={p} current={p === path}>{label}</Link>
              </li>
            ))}
          </ul>
        </nav>
        <span class={`live-status ${status}`} role="status" aria-live="polite" data-testid="live-status">
          {statusText[status]}
        </span>
        <button type="button" class="secondary" onClick={props.onSignOut}>Sign out</button>
      </header>
      <main id="main">
        {Current === undefined
          ? (
            <p>
              No page at {path}. <Link href="/">Go to the overview</Link>
            </p>
          )
          : <Current />}
      </main>
      <Toasts />
    </>
  )
}

const App = () => {
  const [token, setToken] = useState(session.get())
  const signOut = () => {
    session.clear()
    Store.reset()
    resetStats()
    setToken(undefined)
  }
  useEffect(() => onUnauthorized(signOut), [])
  if (token === undefined) {
    return (
      <SignIn
        onSignIn={(t) => {
          session.set(t)
          setToken(t)
        }}
      />
    )
  }
  return <Shell token={token} onSignOut={signOut} />
}

render(<App />, document.getElementById("app")!)
