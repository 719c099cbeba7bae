/**
 * Loopback ports for tests that start processes of their own.
 */
import * as Net from "node:net"

/** A free loopback port (nothing listens on it right now). */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = Net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as Net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })
