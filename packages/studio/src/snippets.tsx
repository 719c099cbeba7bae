/**
 * An MCP endpoint's full URL with a copy button, and ready client
 * configuration for it: `mcpServers` JSON (Cursor and other clients that
 * speak Streamable HTTP with headers; Claude Desktop through mcp-remote) and
 * the MCP Inspector. The token stays a placeholder: Studio never holds a
 * client token's value after it was shown once.
 */
import { CopyButton } from "./ui.tsx"

const TOKEN = "<client token jns_…>"

export const mcpUrl = (path: string) => `${location.origin}${path}`

const snippets = (name: string, url: string): ReadonlyArray<readonly [string, string]> => [
  [
    "Cursor, VS Code and other clients (mcpServers with url)",
    JSON.stringify({ mcpServers: { [name]: { url, headers: { Authorization: `Bearer ${TOKEN}` } } } }, null, 2)
  ],
  [
    "Claude Desktop (claude_desktop_config.json, through mcp-remote)",
    JSON.stringify(
      {
        mcpServers: {
          [name]: {
            command: "npx",
            args: ["-y", "mcp-remote", url, "--header", "Authorization:${JANUS_AUTH}"],
            env: { JANUS_AUTH: `Bearer ${TOKEN}` }
          }
        }
      },
      null,
      2
    )
  ],
  [
    "MCP Inspector",
    `npx @modelcontextprotocol/inspector\n# Transport: Streamable HTTP · URL: ${url}\n` +
    `# Authentication: header Authorization = Bearer ${TOKEN}`
  ]
]

/** The URL of `path` on this gateway, a copy button, and the client snippets under a disclosure. */
export const McpEndpoint = (props: { path: string; name: string; testId?: string | undefined }) => {
  const url = mcpUrl(props.path)
  return (
    <div class="mcp-endpoint" data-testid={props.testId}>
      <div class="buttons">
        <code class="url">{url}</code>
        <CopyButton text={url} label={`Copy URL of ${props.name}`} class="secondary" />
      </div>
      <details>
        <summary>Client configuration for {props.name}</summary>
        {snippets(props.name, url).map(([title, text]) => (
          <div key={title} class="snippet">
            <div class="buttons">
              <strong>{title}</strong>
              <CopyButton text={text} label={`Copy ${title}`} class="secondary" />
            </div>
            <pre tabIndex={0}>{text}</pre>
          </div>
        ))}
      </details>
    </div>
  )
}
