/**
 * The numbers that must agree with each other, read from the RENDERED
 * manifests of base and of each overlay (so an overlay patch that breaks one
 * fails here), and checked against the gateway's own code where they meet
 * it: the variables it reads (`VARIABLES`, parsed with its own parsers), its
 * probe routes (probes/Health.ts), and its drain timeout.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Option, Result } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { VARIABLES } from "../../packages/gateway/src/config/JanusConfig.ts"
import * as HostCheck from "../../packages/gateway/src/http/HostCheck.ts"
import {
  containers,
  documentVariables,
  podSpec,
  Rendered,
  REPO_DIR,
  selects,
  type Target,
  TARGETS
} from "../src/Manifests.ts"
import { parseQuantity } from "../src/Quantity.ts"

const targets = Object.keys(TARGETS) as Array<Target>
type VariableName = keyof typeof VARIABLES
const isVariable = (name: string): name is VariableName => Object.hasOwn(VARIABLES, name)

/**
 * A variable's value as the gateway would see it in this rendering: parsed
 * with the gateway's own parser, or its default when the manifests leave it
 * unset (or it comes from an operator-created Secret).
 */
const setting = <K extends VariableName>(r: Rendered, name: K): (typeof VARIABLES)[K]["default"] => {
  const raw = r.gatewayEnvironment().get(name)
  if (raw === undefined || raw.trim() === "") return VARIABLES[name].default
  const parsed = VARIABLES[name].parse(raw) as Result.Result<(typeof VARIABLES)[K]["default"], string>
  if (Result.isFailure(parsed)) throw new Error(`${name}=${raw}: expected ${parsed.failure}`)
  return parsed.success
}

/** A `-c name=value` (or `--name=value`) setting from the Postgres container's args. */
const postgresSetting = (r: Rendered, name: string): number => {
  const args = containers(r.database).find((c) => c.name === "postgres")!.args ?? []
  const values = args.flatMap((arg, i) => {
    const text = arg.startsWith("--") ? arg.slice(2) : args[i - 1] === "-c" ? arg : undefined
    const match = text === undefined ? null : new RegExp(`^${name}=(\\d+)$`).exec(text)
    return match ? [Number(match[1])] : []
  })
  if (values.length !== 1) throw new Error(`${r.target}: Postgres ${name} must be set explicitly, once`)
  return values[0]!
}

/** A Deployment's maxSurge in pods at `replicas` (an absolute number or a percentage, rounded up). */
const surgeAt = (r: Rendered, replicas: number): number => {
  const surge = r.deployment.spec!.strategy?.rollingUpdate?.maxSurge ?? "25%"
  return typeof surge === "number" ? surge : Math.ceil(replicas * Number.parseFloat(surge) / 100)
}

describe.each(targets)("invariants of %s", (target) => {
  const r = Rendered.of(target)

  it("Postgres connections: max replicas x pool < max_connections - superuser_reserved_connections", () => {
    const maxReplicas = r.hpa.spec!.maxReplicas
    const pool = setting(r, "DB_MAX_OPEN_CONNS")
    const usable = postgresSetting(r, "max_connections") - postgresSetting(r, "superuser_reserved_connections")
    // The ceiling of SPEC.md "Scale-out" and SCALING-PLAN 3b.
    assert.isBelow(maxReplicas * pool, usable, `${maxReplicas} x ${pool} must stay under ${usable}`)
    // The worst case that actually occurs: a rollout at maxReplicas adds the
    // surge pods, each with a full pool, and each replica may hold one more
    // connection for LISTEN (the change feed) outside its pool.
    const worst = (maxReplicas + surgeAt(r, maxReplicas)) * (pool + 1)
    assert.isBelow(worst, usable, `a rollout at max scale needs ${worst} connections of ${usable}`)
  })

  it("HPA: 2..10 on CPU and memory, with a target that is sane against requests and limits", () => {
    const spec = r.hpa.spec!
    assert.isAtLeast(spec.minReplicas!, 2)
    assert.isAtMost(spec.maxReplicas, 10)
    assert.isBelow(spec.minReplicas!, spec.maxReplicas)
    if (target !== "dev") assert.deepStrictEqual([spec.minReplicas, spec.maxReplicas], [2, 10])
    const resources = r.gateway.resources!
    assert.deepStrictEqual([resources.requests!.cpu, resources.requests!.memory], ["400m", "512Mi"])
    for (const name of ["cpu", "memory"] as const) {
      const metric = spec.metrics!.find((m) => m.type === "Resource" && m.resource!.name === name)
      assert.isDefined(metric, `the HPA scales on ${name}`)
      const target = metric!.resource!.target
      assert.strictEqual(target.type, "Utilization")
      const utilisation = target.averageUtilization! / 100
      const request = parseQuantity(resources.requests![name]!)
      const limit = parseQuantity(resources.limits![name]!)
      assert.isTrue(utilisation > 0.3 && utilisation <= 0.9, `${name} target ${utilisation} outside 30..90%`)
      // Scaling starts while a pod still has headroom under its limit...
      assert.isBelow(utilisation * request, limit, `${name}: target x request must be below the limit`)
      // ...and the request is not so far below the limit that routine use
      // reads as several hundred percent and jumps to maxReplicas.
      assert.isBelow(limit / request, 10, `${name}: request ${request} is 10x or more below limit ${limit}`)
    }
  })

  it("PDB: minAvailable 1 still lets one pod be evicted at minReplicas", () => {
    const pdb = r.pdb.spec!
    assert.strictEqual(pdb.minAvailable, 1)
    assert.isUndefined(pdb.maxUnavailable)
    const minReplicas = r.hpa.spec!.minReplicas!
    assert.isAtLeast(minReplicas - (pdb.minAvailable as number), 1, "a node drain must be able to evict a pod")
  })

  it("probes: /healthz for startup and liveness, /readyz for readiness, on the port the gateway listens on", () => {
    const c = r.gateway
    assert.strictEqual(c.livenessProbe?.httpGet?.path, "/healthz")
    assert.strictEqual(c.startupProbe?.httpGet?.path, "/healthz")
    assert.strictEqual(c.readinessProbe?.httpGet?.path, "/readyz")
    const http = c.ports!.find((p) => p.name === "http")!
    assert.strictEqual(http.containerPort, setting(r, "JANUS_PORT"))
    for (const probe of [c.livenessProbe, c.startupProbe, c.readinessProbe]) {
      assert.strictEqual(probe!.httpGet!.port, "http")
    }
    // In a container the gateway must listen on every interface.
    assert.include(["0.0.0.0", "::"], setting(r, "JANUS_HOST"))
  })

  it("the Host check serves every name the cluster routes to the gateway, its pod IPs and its probes", () => {
    const served = HostCheck.make({
      allowedHosts: setting(r, "JANUS_ALLOWED_HOSTS"),
      listenHost: setting(r, "JANUS_HOST")
    })
    const podLabels = r.deployment.spec!.template.metadata!.labels
    const services = r.services.filter((svc) => selects({ matchLabels: svc.spec!.selector ?? {} }, podLabels))
    assert.isNotEmpty(services, "a Service selects the gateway's pods")
    const names = services.flatMap((svc) => {
      const name = svc.metadata!.name!
      const ns = svc.metadata!.namespace
      // within its namespace; qualified names only where the namespace is known (overlays)
      return ns === undefined ? [name] : [name, `${name}.${ns}`, `${name}.${ns}.svc`, `${name}.${ns}.svc.cluster.local`]
    })
    for (const ingress of r.ingresses) {
      for (const rule of ingress.spec!.rules ?? []) if (rule.host !== undefined) names.push(rule.host)
      for (const tls of ingress.spec!.tls ?? []) names.push(...(tls.hosts ?? []))
    }
    assert.isAbove(names.length, 1)
    for (const name of names) assert.isTrue(served(name), `Host ${name} is refused: add it to JANUS_ALLOWED_HOSTS`)
    // the Service port, pod IPs (kubelet probes, Prometheus) and kubectl port-forward
    for (const host of [`${names[0]}:80`, "10.244.3.17:8080", "[fd00:10:244::17]:8080", "localhost:8080"]) {
      assert.isTrue(served(host), `Host ${host} is refused`)
    }
    assert.isFalse(served("janus.attacker.example"), "an unknown name is refused")
    for (const probe of [r.gateway.livenessProbe, r.gateway.readinessProbe, r.gateway.startupProbe]) {
      assert.isTrue(HostCheck.UNCHECKED_PATHS.has(probe!.httpGet!.path!), `${probe!.httpGet!.path} answers any Host`)
    }
  })

  it("terminationGracePeriodSeconds exceeds preStop + JANUS_SHUTDOWN_TIMEOUT", () => {
    const grace = podSpec(r.deployment).terminationGracePeriodSeconds!
    const preStop = r.gateway.lifecycle?.preStop?.sleep?.seconds ?? 0
    const drain = Duration.toSeconds(setting(r, "JANUS_SHUTDOWN_TIMEOUT"))
    assert.isAbove(preStop, 0, "a preStop sleep lets endpoint removal propagate before the drain")
    assert.isAbove(grace, preStop + drain, `grace ${grace}s <= preStop ${preStop}s + drain ${drain}s`)
  })

  it("every container runs non-root with a read-only root filesystem (Pod Security restricted)", () => {
    for (const w of r.workloads) {
      const pod = podSpec(w)
      assert.strictEqual(pod.automountServiceAccountToken, false, `${w.metadata!.name}: no API token`)
      assert.isNotTrue(pod.hostNetwork || pod.hostPID || pod.hostIPC)
      assert.isTrue((pod.volumes ?? []).every((v) => v.hostPath === undefined))
      for (const c of containers(w)) {
        const where = `${w.metadata!.name}/${c.name}`
        const sc = c.securityContext ?? {}
        assert.isTrue(sc.runAsNonRoot ?? pod.securityContext?.runAsNonRoot, `${where}: runAsNonRoot`)
        const uid = sc.runAsUser ?? pod.securityContext?.runAsUser
        assert.isTrue(uid !== undefined && uid > 0, `${where}: a numeric non-root uid`)
        assert.strictEqual(sc.readOnlyRootFilesystem, true, `${where}: read-only root filesystem`)
        assert.strictEqual(sc.allowPrivilegeEscalation, false, `${where}: no privilege escalation`)
        assert.notStrictEqual(sc.privileged, true, `${where}: not privileged`)
        assert.deepStrictEqual(sc.capabilities?.drop, ["ALL"], `${where}: drops all capabilities`)
        assert.isUndefined(sc.capabilities?.add, `${where}: adds no capability`)
        const seccomp = sc.seccompProfile?.type ?? pod.securityContext?.seccompProfile?.type
        assert.strictEqual(seccomp, "RuntimeDefault", `${where}: seccomp RuntimeDefault`)
        for (const side of ["requests", "limits"] as const) {
          assert.isDefined(c.resources?.[side]?.memory, `${where}: memory ${side}`)
        }
      }
    }
    const tmp = r.gateway.volumeMounts?.find((m) => m.mountPath === "/tmp")
    const volume = podSpec(r.deployment).volumes?.find((v) => v.name === tmp?.name)
    assert.isDefined(volume?.emptyDir, "the gateway's /tmp is an emptyDir")
  })

  it("the gateway's environment names only variables it reads, each with a value it accepts", () => {
    const c = r.gateway
    const names = [
      ...(c.env ?? []).map((e) => e.name),
      ...(c.envFrom ?? []).flatMap((source) =>
        source.configMapRef ? Object.keys(r.get<any>("ConfigMap", source.configMapRef.name!).data ?? {}) : []
      ),
      // Every key of the ConfigMaps and Secrets the gateway reads from.
      ...(c.env ?? []).flatMap((e) => {
        const ref = e.valueFrom?.secretKeyRef
        const secret = ref ? r.secrets.find((s) => s.metadata!.name === ref.name) : undefined
        return secret ? Object.keys({ ...secret.data, ...secret.stringData }) : []
      })
    ]
    // besides Janus's own variables: those its configuration document reads (`valueFrom: { env }`)
    const documentNames = documentVariables(r)
    const unknown = names.filter((name) => !isVariable(name) && !documentNames.has(name))
    assert.deepStrictEqual(
      unknown,
      [],
      "not in VARIABLES of packages/gateway/src/config/JanusConfig.ts, nor read by the configuration document"
    )
    for (const [name, raw] of r.gatewayEnvironment()) {
      if (raw === undefined || !isVariable(name)) continue
      const parsed = VARIABLES[name].parse(raw) as Result.Result<unknown, string>
      assert.isTrue(Result.isSuccess(parsed), `${name}=${raw} is rejected by the gateway`)
    }
    // Multi-replica needs Postgres, and a read-only filesystem needs the key
    // from the environment (the embedded mode would write a key file).
    for (const required of ["DATABASE_URL", "JANUS_MASTER_KEY"]) {
      assert.isTrue(r.gatewayEnvironment().has(required), `${required} is set`)
    }
  })

  it("JANUS_METRICS_TOKEN comes from the Secret janus, optional, and is a secret of the gateway", () => {
    const entry = (r.gateway.env ?? []).find((e) => e.name === "JANUS_METRICS_TOKEN")
    // optional: a Secret made before the key existed still starts the pods (with /metrics open)
    assert.deepStrictEqual(entry?.valueFrom?.secretKeyRef, {
      name: "janus",
      key: "JANUS_METRICS_TOKEN",
      optional: true
    })
    assert.isTrue(VARIABLES.JANUS_METRICS_TOKEN.secret)
    // dev renders its placeholder, which the gateway accepts (prod's comes from the operator's Secret)
    assert.strictEqual(r.gatewayEnvironment().get("JANUS_METRICS_TOKEN") !== undefined, target === "dev")
    assert.strictEqual(Option.isSome(setting(r, "JANUS_METRICS_TOKEN")), target === "dev")
  })

  it("DATABASE_URL and REDIS_URL, when rendered, name a rendered Service and its port", () => {
    for (const name of ["DATABASE_URL", "REDIS_URL"] as const) {
      const raw = r.gatewayEnvironment().get(name)
      if (raw === undefined) continue
      const url = new URL(raw)
      const svc = r.get<any>("Service", url.hostname)
      assert.isTrue(svc.spec.ports.some((p: any) => p.port === Number(url.port)), `${name} port ${url.port}`)
    }
    assert.strictEqual(r.gatewayEnvironment().has("REDIS_URL"), target === "prod")
  })
})

describe("the gateway's code", () => {
  it("serves the probe paths the manifests use (packages/gateway/src/probes/Health.ts)", () => {
    const health = Fs.readFileSync(Path.join(REPO_DIR, "packages/gateway/src/probes/Health.ts"), "utf8")
    for (const path of ["/healthz", "/readyz"]) {
      assert.match(health, new RegExp(`router\\.add\\(\\s*"GET",\\s*"${path}"`), `no GET ${path} route`)
    }
  })
})
