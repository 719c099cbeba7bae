/**
 * The client token "try a tool" calls with: one created in this tab (the
 * Tokens page remembers it, in this tab's sessionStorage only, as it does the
 * token in use), a short-lived one minted for the purpose, or one pasted.
 *
 * **Rules**
 *
 * - A minted token is named `studio-try-<time>`, expires after `MINT_MINUTES`
 *   and allows every tool (it is an admin's own test).
 * - Nothing of a token is ever written to a URL or to localStorage.
 */
import { useState } from "preact/hooks"
import { request } from "./api.ts"
import { refresh } from "./store.ts"
import { toast } from "./toast.tsx"
import { SelectField, TextField, useAction } from "./ui.tsx"

const RECENT_KEY = "janus.studio.recentClientTokens"
export const MINT_MINUTES = 15

interface Recent {
  readonly name: string
  readonly token: string
}

const recent = (): Array<Recent> => {
  try {
    const parsed = JSON.parse(sessionStorage.getItem(RECENT_KEY) ?? "[]")
    return Array.isArray(parsed) ? parsed : []
  } catch {
    return []
  }
}

/** Remembers a client token just created in this tab, for Try. */
export const rememberClientToken = (name: string, token: string) =>
  sessionStorage.setItem(RECENT_KEY, JSON.stringify([{ name, token }, ...recent()].slice(0, 5)))

export const TokenChooser = (props: { current: string; onUse: (token: string) => void }) => {
  const tokens = recent()
  const [chosen, setChosen] = useState(tokens[0]?.token ?? "")
  const [pasted, setPasted] = useState("")
  const mint = useAction()
  const label = (t: string) => tokens.find((r) => r.token === t)?.name
  const mintOne = async () => {
    const name = `studio-try-${new Date().toISOString().slice(0, 19).replace(/[:T]/g, "-")}`
    const created = await mint.run(() =>
      request("POST", "client-tokens", {
        body: { name, expiresAt: new Date(Date.now() + MINT_MINUTES * 60_000).toISOString() }
      })
    )
    if (created === undefined) return
    rememberClientToken(name, created.token)
    refresh("client-tokens")
    toast("success", `Minted ${name}, valid for ${MINT_MINUTES} minutes`)
    props.onUse(created.token)
  }
  return (
    <div class="card token-chooser">
      <p class="hint" data-testid="token-in-use">
        {props.current === ""
          ? "Tools are listed and tried through /mcp with a client token: choose one."
          : `Using ${label(props.current) ?? "a pasted token"} (kept in this tab only).`}
      </p>
      <div class="buttons">
        {tokens.length > 0 && (
          <form
            class="inline"
            aria-label="Use a token created in this tab"
            onSubmit={(e) => {
              e.preventDefault()
              props.onUse(chosen)
            }}
          >
            <SelectField
              label="Created in this tab"
              value={chosen}
              options={tokens.map((t) => [t.token, t.name] as const)}
              onChange={setChosen}
            />
            <button type="submit">Use this token</button>
          </form>
        )}
        <button type="button" class="secondary" onClick={mintOne} disabled={mint.busy}>
          Mint a {MINT_MINUTES}-minute token
        </button>
      </div>
      {mint.error !== undefined && <p class="alert" role="alert">{String((mint.error as Error).message)}</p>}
      <form
        class="inline"
        aria-label="Client token for trying tools"
        onSubmit={(e) => {
          e.preventDefault()
          props.onUse(pasted.trim())
        }}
      >
        <TextField
          label="Client token"
          type="password"
          value={pasted}
          onInput={setPasted}
          hint="Or paste one (jns_…)"
        />
        <button type="submit" class="secondary">Use token</button>
      </form>
    </div>
  )
}
