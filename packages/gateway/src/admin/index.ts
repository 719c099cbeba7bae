/**
 * The admin REST API under `/api/v1`: `AdminApiRoutes` (in `AdminApi.ts`,
 * where the choice of `HttpRouter` over `HttpApi` is explained) and what the
 * gateway and tests use of its modules.
 *
 * @since 0.1.0
 */
export { AdminApiRoutes } from "./AdminApi.ts"
export { AdminAuth, AdminIdentity } from "./AdminAuth.ts"
export { AdminRouter, PREFIX } from "./AdminRouter.ts"
export { MAX_BODY_BYTES } from "./JsonBody.ts"
export { DEFAULT_LIMIT, MAX_LIMIT } from "./Pagination.ts"
export { ApiProblem, type FieldError } from "./Problem.ts"
