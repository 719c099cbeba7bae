/**
 * Kubernetes resource quantities (`400m`, `1`, `512Mi`, `10Gi`) as numbers,
 * for comparing requests, limits and HPA targets in the manifest tests.
 *
 * @since 0.1.0
 */

const SUFFIXES: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  "": 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60
}

/** The value of a quantity in base units (cores for CPU, bytes for memory). */
export const parseQuantity = (quantity: string | number): number => {
  if (typeof quantity === "number") return quantity
  const match = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))([a-zA-Z]*)$/.exec(quantity.trim())
  const factor = match ? SUFFIXES[match[2]!] : undefined
  if (!match || factor === undefined) throw new Error(`not a Kubernetes quantity: ${quantity}`)
  return Number(match[1]) * factor
}
