/**
 * The schema validator (src/Validate.ts) and the quantity parser: they catch
 * the mistakes the manifest tests rely on them to catch.
 */
import { assert, describe, it } from "@effect/vitest"
import { parseQuantity } from "../src/Quantity.ts"
import { validateObject } from "../src/Validate.ts"

const deployment = () => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "x", labels: { a: "b" } },
  spec: {
    selector: { matchLabels: { a: "b" } },
    template: {
      metadata: { labels: { a: "b" } },
      spec: {
        containers: [{
          name: "c",
          image: "i",
          resources: { requests: { cpu: "400m" } },
          lifecycle: { preStop: { sleep: { seconds: 5 } } },
          ports: [{ name: "http", containerPort: 8080 }]
        }]
      }
    }
  }
})

describe("validateObject (Kubernetes 1.36 schemas)", () => {
  it("accepts a valid object", () => {
    assert.deepStrictEqual(validateObject(deployment()), [])
  })

  it("reports a wrong type", () => {
    const d: any = deployment()
    d.spec.template.spec.containers[0].ports[0].containerPort = "8080"
    assert.deepStrictEqual(validateObject(d), [
      "/spec/template/spec/containers/0/ports/0/containerPort: type {\"type\":\"integer\"}"
    ])
  })

  it("reports a missing required field", () => {
    const d: any = deployment()
    delete d.spec.template.spec.containers[0].name
    assert.match(validateObject(d).join("\n"), /containers\/0: required .*"name"/)
  })

  it("reports unknown (misspelt) fields, which the schemas alone would let through", () => {
    const d: any = deployment()
    d.spec.template.spec.containers[0].livenesProbe = { httpGet: { path: "/healthz", port: "http" } }
    d.spec.replica = 2
    assert.deepStrictEqual(validateObject(d).sort(), [
      "/spec/replica: unknown field",
      "/spec/template/spec/containers/0/livenesProbe: unknown field"
    ])
  })

  it("rejects an apiVersion that Kubernetes 1.36 no longer serves", () => {
    assert.match(
      validateObject({ apiVersion: "policy/v1beta1", kind: "PodDisruptionBudget" })[0]!,
      /not a served API/
    )
  })
})

describe("parseQuantity", () => {
  it("reads CPU and memory quantities", () => {
    assert.strictEqual(parseQuantity("400m"), 0.4)
    assert.strictEqual(parseQuantity("1"), 1)
    assert.strictEqual(parseQuantity(2), 2)
    assert.strictEqual(parseQuantity("512Mi"), 512 * 2 ** 20)
    assert.strictEqual(parseQuantity("1Gi"), 2 ** 30)
    assert.strictEqual(parseQuantity("1G"), 1e9)
    assert.throws(() => parseQuantity("1GB"))
  })
})
