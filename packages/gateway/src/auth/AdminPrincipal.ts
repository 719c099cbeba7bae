/**
 * Who an admin request is served for, once authenticated.
 *
 * **Rules**
 *
 * - An admin caller is an admin token (`jna_…`, by id and name) or an OAuth
 *   access token carrying the admin scopes (by issuer, subject and client).
 *   Never a credential: nothing here is a secret.
 *
 * **Details**
 *
 * The admin API authenticates (`admin/AdminAuth.ts`); auth's
 * `CredentialLifetime` ends an admin event stream when the credential stops
 * being accepted. The type lives here, with the MCP caller's rules, so that
 * auth never depends on the admin API that builds on it.
 *
 * @since 0.1.0
 */

/** The authenticated caller of an admin request. */
export type AdminPrincipal =
  | { readonly kind: "admin_token"; readonly tokenId: string; readonly name: string }
  | {
    readonly kind: "oauth"
    readonly subject: string
    readonly issuer: string
    readonly clientId: string | undefined
    /** When the access token stops being accepted (epoch ms): an event stream it opened ends then. */
    readonly expiresAt: number
  }
