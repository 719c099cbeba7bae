/**
 * The configuration document's wiring in each rendering (base, dev, prod):
 * JANUS_CONFIG_FILE names a key of a rendered ConfigMap mounted whole
 * (never with subPath, which never sees an update) and read-only into the
 * gateway container; the document there is valid for the gateway's own
 * decoder; every `valueFrom.env` it names reaches the container (from a
 * rendered Secret, or one deploy/README.md tells the operator to create);
 * and it carries no token or secret value.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Result } from "effect"
import type { IConfigMap } from "kubernetes-models/v1/ConfigMap"
import * as Path from "node:path"
import { VARIABLES } from "../../packages/gateway/src/config/JanusConfig.ts"
import { fromText } from "../../packages/gateway/src/configuration/Document.ts"
import { documentVariables, podSpec, Rendered, type Target, TARGETS } from "../src/Manifests.ts"

const targets = Object.keys(TARGETS) as Array<Target>

describe.each(targets)("the configuration document in %s", (target) => {
  const r = Rendered.of(target)
  const env = r.gatewayEnvironment()
  const file = VARIABLES.JANUS_CONFIG_FILE.parse(env.get("JANUS_CONFIG_FILE") ?? "")
  const path = Result.isSuccess(file) ? Option.getOrUndefined(file.success) : undefined

  it("JANUS_CONFIG_FILE names a key of a ConfigMap mounted whole and read-only; JANUS_CONFIG_PRUNE is valid", () => {
    assert.isDefined(path, "JANUS_CONFIG_FILE is set")
    assert.isTrue(Result.isSuccess(VARIABLES.JANUS_CONFIG_PRUNE.parse(env.get("JANUS_CONFIG_PRUNE") ?? "")))
    const mount = (r.gateway.volumeMounts ?? []).find((m) => Path.dirname(path!) === m.mountPath)
    assert.isDefined(mount, `a volume is mounted at ${Path.dirname(path!)}`)
    assert.isUndefined(mount!.subPath, "no subPath: the kubelet's updates (a symlink swap) would never reach it")
    assert.isUndefined(mount!.subPathExpr)
    assert.isTrue(mount!.readOnly)
    const volume = (podSpec(r.deployment).volumes ?? []).find((v) => v.name === mount!.name)
    const name = volume?.configMap?.name
    assert.isDefined(name, "the volume is a ConfigMap")
    assert.isUndefined(volume!.configMap!.items, "every key, under its own name")
    const configMap = r.get<IConfigMap>("ConfigMap", name!)
    assert.property(configMap.data ?? {}, Path.basename(path!))
  })

  it("the document is valid for the gateway, its valueFrom variables reach the pod, and it holds no value", () =>
    Effect.gen(function*() {
      const volume = (podSpec(r.deployment).volumes ?? []).find((v) => v.configMap?.name === "janus-configuration")!
      const text = r.get<IConfigMap>("ConfigMap", volume.configMap!.name!).data![Path.basename(path!)]!
      const doc = yield* fromText(text, "janus.yaml")
      const names = [...documentVariables(r)]
      assert.deepStrictEqual(
        names,
        [...doc.secrets, ...doc.clientTokens].flatMap((item) => item.value.valueFrom?.env ?? [])
      )
      for (const name of names) {
        assert.isTrue(env.has(name), `${name} (valueFrom) is in the gateway container's environment`)
        assert.isFalse(name in VARIABLES, `${name} is not one of Janus's own variables`)
      }
      assert.notMatch(text, /jn[as]_[A-Za-z0-9_-]{20,}/, "no token value in the document")
      if (target === "dev") {
        assert.deepStrictEqual(names, ["DEV_CLIENT_TOKEN"])
        assert.match(env.get("DEV_CLIENT_TOKEN") ?? "", /^jns_[A-Za-z0-9_-]{43}$/, "a client token's shape")
        assert.deepStrictEqual(doc.endpoints.map((e) => e.value.name), ["uuid", "status"])
      } else {
        // base and prod declare nothing: applying the document changes nothing
        assert.deepStrictEqual(
          [doc.secrets, doc.connections, doc.endpoints, doc.virtualServers, doc.clientTokens].map((s) => s.length),
          [0, 0, 0, 0, 0]
        )
      }
    }))
})
