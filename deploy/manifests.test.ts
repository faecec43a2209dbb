import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { parse, parseAllDocuments } from "yaml";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { DEPLOY_AUTHORIZATION_FILE, deployNatsAuthorization, NATS_USERS, natsPasswordVariable } from "@renderbus/bus";
import { rpcTransportConfigOf } from "@renderbus/config";
import { newServiceKeySets, serviceKeyringOf } from "@renderbus/rpc";
import { SERVICE_NODE_FLAGS } from "@renderbus/testing";
import { authConfigSchema } from "../services/auth/src/config.js";
import { gatewayConfigSchema } from "../services/gateway/src/config.js";
import { jobsConfigSchema } from "../services/jobs/src/config.js";
import { configSchema as dispatcherConfigSchema } from "../services/webhook-dispatcher/src/config.js";
import { workerConfigSchema } from "../services/worker/src/config.js";

const deployDir = import.meta.dirname;
const repoRoot = resolve(deployDir, "..");
const SERVICES = ["gateway", "auth", "jobs", "worker", "webhook-dispatcher"] as const;
type ServiceName = (typeof SERVICES)[number];

const SCHEMAS: Record<ServiceName, z.ZodType> = {
  gateway: gatewayConfigSchema,
  auth: authConfigSchema,
  jobs: jobsConfigSchema,
  worker: workerConfigSchema,
  "webhook-dispatcher": dispatcherConfigSchema,
};

/** The variable each listening service binds with; inside a container it must be every interface. */
const BIND_HOST: Partial<Record<ServiceName, string>> = {
  gateway: "GATEWAY_HOST",
  auth: "AUTH_BIND_HOST",
  jobs: "JOBS_GRPC_HOST",
  "webhook-dispatcher": "WEBHOOKS_GRPC_HOST",
};

const GRPC_PORT: Partial<Record<ServiceName, string>> = {
  auth: "AUTH_GRPC_PORT",
  jobs: "JOBS_GRPC_PORT",
  "webhook-dispatcher": "WEBHOOKS_GRPC_PORT",
};

// Loose shapes: the test asserts on them, so every access is checked at run time.
type Doc = Record<string, any>;

function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return yamlFiles(path);
    return /\.ya?ml$/.test(entry.name) ? [path] : [];
  });
}

const files = [...yamlFiles(deployDir), join(repoRoot, "docker-compose.yml")];
const k8sFiles = files.filter((file) => file.includes(`${deployDir}/k8s/`) || file.includes(`${deployDir}/nats/`));
const k8sDocs: Doc[] = k8sFiles
  .filter((file) => !file.endsWith("kustomization.yaml"))
  .flatMap((file) => parseAllDocuments(readFileSync(file, "utf8")).map((doc) => doc.toJS() as Doc))
  .filter(Boolean);
const ofKind = (kind: string) => k8sDocs.filter((doc) => doc.kind === kind);
const named = (kind: string, name: string) => ofKind(kind).find((doc) => doc.metadata?.name === name);

const deployments = ofKind("Deployment");
const serviceDeployment = (service: ServiceName) => named("Deployment", service)!;
const containerOf = (workload: Doc) => workload.spec.template.spec.containers[0] as Doc;

describe("deploy manifests", () => {
  it.each(files.map((file) => [relative(repoRoot, file), file]))("%s parses as YAML", (_name, file) => {
    const documents = parseAllDocuments(readFileSync(file, "utf8"), { merge: true });
    for (const document of documents) expect(document.errors).toEqual([]);
    expect(documents.length).toBeGreaterThan(0);
  });

  it("gives every Kubernetes object an apiVersion, a kind, a name and the renderbus namespace", () => {
    expect(k8sDocs.length).toBeGreaterThan(10);
    for (const doc of k8sDocs) {
      expect(doc.apiVersion, JSON.stringify(doc.metadata)).toBeTruthy();
      expect(doc.kind).toBeTruthy();
      expect(doc.metadata?.name).toBeTruthy();
      if (doc.kind !== "Namespace") expect(doc.metadata.namespace, `${doc.kind}/${doc.metadata.name}`).toBe("renderbus");
    }
  });

  it("lists only existing files in the kustomizations", () => {
    for (const file of k8sFiles.filter((each) => each.endsWith("kustomization.yaml"))) {
      const { resources } = parse(readFileSync(file, "utf8")) as { resources: string[] };
      for (const resource of resources) expect(existsSync(join(dirname(file), resource)), resource).toBe(true);
    }
  });

  it("lets only the worker create the namespaces of its media sandbox (bubblewrap), in Kubernetes and compose", () => {
    expect(serviceDeployment("worker").spec.template.spec.securityContext.seccompProfile).toEqual({ type: "Unconfined" });
    for (const service of SERVICES.filter((name) => name !== "worker")) {
      expect(serviceDeployment(service).spec.template.spec.securityContext?.seccompProfile, service).toBeUndefined();
    }
    const compose = parse(readFileSync(join(repoRoot, "docker-compose.yml"), "utf8"), { merge: true }) as Doc;
    expect(compose.services.worker.security_opt).toEqual(["seccomp=unconfined"]);
    expect(SERVICES.filter((name) => name !== "worker" && compose.services[name].security_opt !== undefined)).toEqual([]);
  });

  it("has a Deployment for every service", () => {
    expect(SERVICES.filter((service) => !named("Deployment", service))).toEqual([]);
  });

  it.each(deployments.map((doc) => [doc.metadata.name, doc]))("Deployment %s has an image, resources and probes", (_name, deployment) => {
    const { spec } = deployment as Doc;
    expect(Object.keys(spec.selector.matchLabels).length).toBeGreaterThan(0);
    for (const [key, value] of Object.entries(spec.selector.matchLabels)) expect(spec.template.metadata.labels[key]).toBe(value);
    for (const container of spec.template.spec.containers as Doc[]) {
      expect(container.image).toMatch(/^[\w./-]+:[\w.-]+$/);
      for (const bound of ["requests", "limits"]) {
        expect(container.resources?.[bound]?.cpu, `${container.name} ${bound}.cpu`).toBeDefined();
        expect(container.resources?.[bound]?.memory, `${container.name} ${bound}.memory`).toBeDefined();
      }
      expect(container.readinessProbe, `${container.name} readinessProbe`).toBeDefined();
      expect(container.livenessProbe, `${container.name} livenessProbe`).toBeDefined();
    }
  });

  it.each(SERVICES)("the %s Deployment runs its service with the shared config, a grace period and a preStop sleep", (service) => {
    const deployment = serviceDeployment(service);
    const container = containerOf(deployment);
    const env = Object.fromEntries((container.env as Doc[]).map((entry) => [entry.name, entry.value]));
    expect(env.SERVICE).toBe(service);
    expect(container.image).toMatch(/^renderbus:/);
    expect(container.envFrom).toEqual([{ configMapRef: { name: "renderbus-config" } }, { secretRef: { name: "renderbus-secrets" } }, { secretRef: { name: `renderbus-${service}-service-keys` } }]);
    expect(deployment.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(0);
    const preStop = container.lifecycle?.preStop?.exec?.command as string[];
    expect(preStop[0]).toBe("sleep");
    expect(Number(preStop[1])).toBeLessThan(deployment.spec.template.spec.terminationGracePeriodSeconds);
    const bindHost = BIND_HOST[service];
    if (bindHost) expect(env[bindHost]).toBe("0.0.0.0");
  });

  it("probes the gateway and the worker over HTTP (/readyz, /healthz) and the gRPC services with gRPC health on their ports", () => {
    const gateway = containerOf(serviceDeployment("gateway"));
    expect(gateway.readinessProbe.httpGet.path).toBe("/readyz");
    expect(gateway.livenessProbe.httpGet.path).toBe("/healthz");
    for (const [service, portVariable] of Object.entries(GRPC_PORT) as [ServiceName, string][]) {
      const container = containerOf(serviceDeployment(service));
      const port = Number((container.env as Doc[]).find((entry) => entry.name === portVariable)?.value);
      expect(port, service).toBeGreaterThan(0);
      for (const probe of ["startupProbe", "readinessProbe", "livenessProbe"]) expect(container[probe].grpc.port, `${service} ${probe}`).toBe(port);
      expect((container.ports as Doc[]).map((each) => each.containerPort)).toContain(port);
    }
    const worker = containerOf(serviceDeployment("worker"));
    expect(worker.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "metrics" });
  });

  it("autoscales the worker and the webhook dispatcher", () => {
    const hpas = ofKind("HorizontalPodAutoscaler");
    expect(hpas.map((hpa) => hpa.spec.scaleTargetRef.name).sort()).toEqual(["webhook-dispatcher", "worker"]);
    for (const hpa of hpas) {
      expect(hpa.apiVersion).toBe("autoscaling/v2");
      expect(named("Deployment", hpa.spec.scaleTargetRef.name)).toBeDefined();
      expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
      expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
    }
  });

  it("routes every Service to pods that exist, on named ports they declare", () => {
    const workloads = [...deployments, ...ofKind("StatefulSet")];
    for (const service of ofKind("Service")) {
      const target = workloads.find((workload) =>
        Object.entries(service.spec.selector).every(([key, value]) => workload.spec.template.metadata.labels[key] === value),
      );
      expect(target, `Service ${service.metadata.name}`).toBeDefined();
      const portNames = (containerOf(target!).ports as Doc[]).map((port) => port.name);
      for (const port of service.spec.ports as Doc[]) {
        if (typeof port.targetPort === "string") expect(portNames, `Service ${service.metadata.name}`).toContain(port.targetPort);
      }
    }
  });

  it("keeps secrets in a Secret and tells services to create streams with 3 replicas", () => {
    const secret = named("Secret", "renderbus-secrets")!;
    expect(Object.keys(secret.stringData).sort()).toEqual(["BETTER_AUTH_SECRET", "DATABASE_URL", "OUTPUT_SIGNING_SECRET", "REDIS_URL", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY", "SECRETS_ENCRYPTION_KEY", "SMTP_URL"]);
    const config = named("ConfigMap", "renderbus-config")!;
    expect(config.data.NATS_REPLICAS).toBe("3");
    for (const key of Object.keys(config.data)) expect(key).not.toMatch(/SECRET|PASSWORD|DATABASE_URL/);
  });

  it("runs NATS as a 3-node JetStream cluster whose routes name every node", () => {
    const nats = named("StatefulSet", "nats")!;
    expect(nats.spec.replicas).toBe(3);
    expect(nats.spec.serviceName).toBe("nats-headless");
    const conf = named("ConfigMap", "nats-config")!.data["nats.conf"] as string;
    expect(conf).toMatch(/jetstream \{/);
    for (const node of [0, 1, 2]) expect(conf).toContain(`nats://nats-${node}.nats-headless.renderbus.svc.cluster.local:6222`);
    expect(named("PodDisruptionBudget", "nats")!.spec.minAvailable).toBe(2);
  });

  it("gives the collector's ConfigMap the same document as deploy/otel-collector.yaml, exporting to Jaeger", () => {
    const standalone = parse(readFileSync(join(deployDir, "otel-collector.yaml"), "utf8")) as Doc;
    const inCluster = parse(named("ConfigMap", "otel-collector-config")!.data["config.yaml"] as string) as Doc;
    expect(inCluster).toEqual(standalone);
    expect(standalone.service.pipelines.traces.exporters).toEqual(["otlp/jaeger"]);
    expect(standalone.receivers.otlp.protocols.http.endpoint).toBe("0.0.0.0:4318");
    expect(named("Service", "jaeger")).toBeDefined();
  });

  it("exposes Prometheus /metrics on every service: scrape annotations name a declared port, METRICS_PORT serves it", () => {
    for (const service of SERVICES) {
      const deployment = serviceDeployment(service);
      const annotations = deployment.spec.template.metadata.annotations as Record<string, string>;
      expect(annotations?.["prometheus.io/scrape"], service).toBe("true");
      expect(annotations["prometheus.io/path"]).toBe("/metrics");
      const container = containerOf(deployment);
      const port = (container.ports as Doc[]).find((each) => String(each.containerPort) === annotations["prometheus.io/port"]);
      expect(port, `${service} declares port ${annotations["prometheus.io/port"]}`).toBeDefined();
      // Every service serves /metrics on its own port: METRICS_PORT, the gateway's GATEWAY_METRICS_PORT (never its
      // public HTTP port, which its Service exposes alone).
      const env = Object.fromEntries((container.env as Doc[]).map((entry) => [entry.name, entry.value]));
      if (service === "gateway") {
        expect(env.GATEWAY_METRICS_PORT).toBe(annotations["prometheus.io/port"]);
        expect(env.GATEWAY_METRICS_PORT).not.toBe(env.GATEWAY_PORT);
        const exposed = (named("Service", "gateway")!.spec.ports as Doc[]).map((each) => each.targetPort);
        expect(exposed).toEqual(["http"]);
      } else expect(env.METRICS_PORT, service).toBe(annotations["prometheus.io/port"]);
    }
    // With a port to answer on, the worker's liveness is an HTTP check, not a process listing.
    expect(containerOf(serviceDeployment("worker")).livenessProbe.httpGet).toEqual({ path: "/healthz", port: "metrics" });
  });

  it("gives each service its internal call keys from a Secret of its own, which no other service reads", () => {
    const keys = newServiceKeySets("k1");
    for (const service of SERVICES) {
      const sources = (containerOf(serviceDeployment(service)).envFrom as Doc[]).map((source) => source.secretRef?.name).filter(Boolean);
      expect(sources, service).toEqual(["renderbus-secrets", `renderbus-${service}-service-keys`]);
      expect(Object.keys(named("Secret", `renderbus-${service}-service-keys`)!.stringData)).toEqual(["SERVICE_TOKEN_KEYS"]);
      // Filled with `npm run service-keys`, each Secret passes the production checks (no other service's private key).
      expect(() => serviceKeyringOf(service, { MODE: "production", SERVICE_TOKEN_KEYS: keys[service] }), service).not.toThrow();
    }
  });

  it("gives every service a valid configuration in Kubernetes once the Secret's placeholders are replaced", () => {
    const config = named("ConfigMap", "renderbus-config")!.data as Record<string, string>;
    const secrets = {
      ...(named("Secret", "renderbus-secrets")!.stringData as Record<string, string>),
      OUTPUT_SIGNING_SECRET: "a-real-output-signing-secret",
      SECRETS_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString("base64"),
      BETTER_AUTH_SECRET: "x".repeat(48),
      SMTP_URL: "smtps://renderbus:a-real-password@smtp.example.com:465",
      S3_ACCESS_KEY_ID: "AKIAREALKEYID",
      S3_SECRET_ACCESS_KEY: "a-real-s3-secret-access-key",
    };
    for (const service of SERVICES) {
      const own = Object.fromEntries(
        (containerOf(serviceDeployment(service)).env as Doc[]).filter((entry) => entry.value !== undefined).map((entry) => [entry.name, entry.value]),
      );
      const result = SCHEMAS[service].safeParse({ ...config, ...secrets, SERVICE_TOKEN_KEYS: newServiceKeySets("k1")[service], ...own });
      expect(result.error?.issues ?? [], service).toEqual([]);
    }
    // The placeholders themselves are refused, so a forgotten Secret stops the service naming the variable.
    const placeholders = (service: ServiceName) => ({ ...named("Secret", "renderbus-secrets")!.stringData, ...named("Secret", `renderbus-${service}-service-keys`)!.stringData });
    const refused = (service: ServiceName) => [...new Set(SCHEMAS[service].safeParse({ ...config, ...placeholders(service) }).error?.issues.map((issue) => issue.path.join(".")))].sort();
    expect(refused("auth")).toEqual(["BETTER_AUTH_SECRET", "SECRETS_ENCRYPTION_KEY", "SERVICE_TOKEN_KEYS", "SMTP_URL"]);
    expect(refused("gateway")).toEqual(expect.arrayContaining(["OUTPUT_SIGNING_SECRET", "S3_SECRET_ACCESS_KEY"]));
    expect(refused("worker")).toEqual(expect.arrayContaining(["OUTPUT_SIGNING_SECRET", "S3_SECRET_ACCESS_KEY"]));
  });

  it("runs production with the gRPC transport stated, as a production service requires (RPC_TRANSPORT=mesh)", () => {
    const config = named("ConfigMap", "renderbus-config")!.data as Record<string, string>;
    expect(config.MODE).toBe("production");
    for (const service of SERVICES) {
      const own = Object.fromEntries((containerOf(serviceDeployment(service)).env as Doc[]).filter((entry) => entry.value !== undefined).map((entry) => [entry.name, entry.value]));
      // Throws ConfigError naming RPC_TRANSPORT when production leaves it unset or plaintext.
      expect(rpcTransportConfigOf({ ...config, ...own }), service).toEqual({ mode: "mesh" });
    }
  });

  it("keeps outputs and uploads in an S3 bucket: no shared volume, and the gateway and the worker reach the store over HTTPS", () => {
    const config = named("ConfigMap", "renderbus-config")!.data as Record<string, string>;
    expect(config).toMatchObject({ STORAGE: "s3", S3_BUCKET: expect.any(String) });
    // With STORAGE=s3 uploads are under uploads/ of the bucket (docs/uploads.md): no upload directory to share.
    expect(config.UPLOAD_DIR).toBeUndefined();
    for (const service of ["gateway", "worker"] as const) {
      const pod = serviceDeployment(service).spec.template.spec as Doc;
      expect(pod.volumes ?? [], service).toEqual([]);
      expect(containerOf(serviceDeployment(service)).volumeMounts ?? [], service).toEqual([]);
    }
    expect(ofKind("PersistentVolumeClaim")).toEqual([]);
  });
});

describe("docker-compose.yml", () => {
  const compose = parse(readFileSync(join(repoRoot, "docker-compose.yml"), "utf8"), { merge: true }) as Doc;
  /** What an operator must export before `docker compose up`: compose refuses to start without them. */
  const operatorSecrets: Record<string, string> = {
    OUTPUT_SIGNING_SECRET: "an-operator-chosen-output-signing-secret",
    SECRETS_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 9).toString("base64")}`,
    BETTER_AUTH_SECRET: "o".repeat(48),
    S3_SECRET_ACCESS_KEY: "an-operator-chosen-minio-secret",
    SMTP_URL: "smtp://renderbus:an-smtp-password@smtp.example.com:587",
    // `npm run service-keys`: one variable per service.
    ...Object.fromEntries(Object.entries(newServiceKeySets("c1")).map(([service, value]) => [`${service.toUpperCase().replace(/-/g, "_")}_SERVICE_TOKEN_KEYS`, value])),
  };
  /** `${NAME:-default}` as compose resolves it with NAME unset, `${NAME:?message}` with NAME exported. */
  const interpolate = (value: unknown) =>
    String(value)
      .replace(/\$\{([A-Z0-9_]+):-([^}]*)\}/g, (_match, name: string, fallback: string) => operatorSecrets[name] ?? fallback)
      .replace(/\$\{([A-Z0-9_]+):\?[^}]*\}/g, (_match, name: string) => operatorSecrets[name] ?? "");
  const envOf = (service: string): Record<string, string> =>
    Object.fromEntries(Object.entries(compose.services[service].environment as Record<string, unknown>).map(([key, value]) => [key, interpolate(value)]));

  it("runs PostgreSQL 15, NATS 2.10 with JetStream, Redis 7, an OpenTelemetry collector and Jaeger", () => {
    expect(compose.services.postgres.image).toBe("postgres:15");
    expect(compose.services.nats.image).toMatch(/^nats:2\.10/);
    expect(compose.services.nats.command).toContain("-js");
    expect(compose.services.redis.image).toBe("redis:7");
    expect(compose.services["otel-collector"].image).toMatch(/^otel\/opentelemetry-collector/);
    expect(compose.services["otel-collector"].volumes[0]).toMatch(/^\.\/deploy\/otel-collector\.yaml:/);
    expect(compose.services.jaeger.image).toMatch(/^jaegertracing\//);
  });

  it.each(SERVICES)("builds %s from the Dockerfile with the service conventions' environment", (service) => {
    const definition = compose.services[service] as Doc;
    expect(definition, service).toBeDefined();
    expect(definition.build).toBe(".");
    const env = envOf(service);
    expect(env.SERVICE).toBe(service);
    for (const variable of ["MODE", "LOG_LEVEL", "DATABASE_URL", "NATS_URL", "NATS_NAMESPACE", "OTEL_EXPORTER_OTLP_ENDPOINT", "AUTH_GRPC_ADDRESS", "JOBS_GRPC_ADDRESS", "WEBHOOKS_GRPC_ADDRESS", "PUBLIC_URL", "OUTPUT_DIR", "OUTPUT_SIGNING_SECRET", "SECRETS_ENCRYPTION_KEYS"]) {
      expect(env[variable], `${service} ${variable}`).toBeDefined();
    }
    expect(env.OTEL_EXPORTER_OTLP_ENDPOINT).toBe("http://otel-collector:4318");
    const bindHost = BIND_HOST[service];
    if (bindHost) expect(env[bindHost]).toBe("0.0.0.0");
    const result = SCHEMAS[service].safeParse(env);
    expect(result.error?.issues ?? [], service).toEqual([]);
    // Production (compose's default MODE) refuses to start without the gRPC transport stated.
    expect(env.MODE).toBe("production");
    expect(rpcTransportConfigOf(env), service).toEqual({ mode: "mesh" });
    expect(definition.healthcheck?.test, `${service} healthcheck`).toBeDefined();
  });

  it("scrapes every service with Prometheus and provisions the Grafana dashboard on it", () => {
    const prometheus = parse(readFileSync(join(deployDir, "prometheus.yml"), "utf8")) as Doc;
    const targets = (prometheus.scrape_configs as Doc[]).flatMap((job) => (job.static_configs as Doc[]).flatMap((config) => config.targets as string[]));
    for (const service of SERVICES) {
      const port = service === "gateway" ? envOf("gateway").GATEWAY_METRICS_PORT : envOf(service).METRICS_PORT;
      expect(targets, service).toContain(`${service}:${port}`);
    }
    expect(compose.services.prometheus.volumes[0]).toMatch(/^\.\/deploy\/prometheus\.yml:/);
    const grafana = compose.services.grafana as Doc;
    expect(grafana.volumes).toContain("./deploy/grafana/renderbus.json:/var/lib/grafana/dashboards/renderbus.json:ro");
    const providers = parse(readFileSync(join(deployDir, "grafana/provisioning/dashboards/renderbus.yaml"), "utf8")) as Doc;
    expect(providers.providers[0].options.path).toBe("/var/lib/grafana/dashboards");
    const datasources = parse(readFileSync(join(deployDir, "grafana/provisioning/datasources/prometheus.yaml"), "utf8")) as Doc;
    expect(datasources.datasources[0]).toMatchObject({ type: "prometheus", url: "http://prometheus:9090" });
    // Which metrics the dashboard may query is checked against live services in e2e/tracing.e2e.test.ts.
    const dashboard = JSON.parse(readFileSync(join(deployDir, "grafana/renderbus.json"), "utf8")) as Doc;
    expect(dashboard.panels.length).toBeGreaterThan(5);
  });

  it("runs MODE=production by default and has no default for any secret (compose stops naming the missing one)", () => {
    const common = compose["x-common-env"] as Record<string, string>;
    expect(common.MODE).toBe("${MODE:-production}");
    for (const secret of ["OUTPUT_SIGNING_SECRET", "SECRETS_ENCRYPTION_KEYS", "BETTER_AUTH_SECRET", "S3_SECRET_ACCESS_KEY"]) {
      expect(common[secret], secret).toMatch(new RegExp(`^\\$\\{${secret}:\\?set ${secret}\\b[^}]*\\}$`));
    }
    expect(common.SECRETS_ENCRYPTION_KEY).toBeUndefined();
    // Each service's internal call keys are its own variable, never one value every service reads.
    expect(common.SERVICE_TOKEN_KEYS).toBeUndefined();
    for (const service of SERVICES) {
      const keys = envOf(service).SERVICE_TOKEN_KEYS!;
      expect(keys, service).toBe(operatorSecrets[`${service.toUpperCase().replace(/-/g, "_")}_SERVICE_TOKEN_KEYS`]);
      expect(() => serviceKeyringOf(service, { MODE: "production", SERVICE_TOKEN_KEYS: keys }), service).not.toThrow();
    }
    expect(readFileSync(join(repoRoot, "Dockerfile"), "utf8")).toMatch(/^ENV [^]*?\bMODE=production\b/m);
    // Sign-ups confirm their address by default: auth without SMTP_URL stops naming it (or runs with EMAIL_VERIFICATION=off).
    const auth = compose.services.auth.environment as Record<string, string>;
    expect(auth.EMAIL_VERIFICATION).toBe("${EMAIL_VERIFICATION:-required}");
    const withoutMail = { ...envOf("auth"), SMTP_URL: "" };
    expect(SCHEMAS.auth.safeParse(withoutMail).error?.issues.map((issue) => issue.path.join("."))).toEqual(["SMTP_URL"]);
    expect(SCHEMAS.auth.safeParse({ ...withoutMail, EMAIL_VERIFICATION: "off" }).error).toBeUndefined();
  });

  it("keeps outputs in MinIO by default: the services' S3 settings name its bucket and its root user's secret", () => {
    const minio = compose.services.minio as Doc;
    expect(minio.image).toMatch(/^minio\/minio:RELEASE\./);
    expect(minio.ports).toBeUndefined();
    expect(compose.services["minio-setup"].entrypoint).toEqual(["mc", "mb", "--ignore-existing", "store/renderbus"]);
    for (const service of ["worker", "gateway"]) {
      const env = envOf(service);
      expect(env, service).toMatchObject({ STORAGE: "s3", S3_ENDPOINT: "http://minio:9000", S3_BUCKET: "renderbus", S3_FORCE_PATH_STYLE: "true", S3_ACCESS_KEY_ID: minio.environment.MINIO_ROOT_USER });
      expect(env.S3_SECRET_ACCESS_KEY).toBe(operatorSecrets.S3_SECRET_ACCESS_KEY);
      expect(compose.services[service].depends_on["minio-setup"], service).toEqual({ condition: "service_completed_successfully" });
    }
    expect(interpolate(minio.environment.MINIO_ROOT_PASSWORD)).toBe(operatorSecrets.S3_SECRET_ACCESS_KEY);
    // MinIO is not published: the gateway streams downloads rather than redirecting clients to it.
    expect(envOf("gateway").S3_DOWNLOADS).toBe("stream");
  });

  it("shares one output volume between the worker and the gateway (STORAGE=local)", () => {
    expect(compose.services.worker.volumes).toContain("outputs:/data/outputs");
    expect(compose.services.gateway.volumes).toContain("outputs:/data/outputs");
    expect(envOf("worker").OUTPUT_SIGNING_SECRET).toBe(envOf("gateway").OUTPUT_SIGNING_SECRET);
  });

  it("publishes only the gateway's port beyond the host: every other published port is bound to 127.0.0.1", () => {
    const published = Object.entries(compose.services as Record<string, Doc>).flatMap(([name, service]) =>
      ((service.ports ?? []) as unknown[]).map((port) => [name, String(port)] as const),
    );
    expect(published.map(([name]) => name)).toEqual(expect.arrayContaining(["gateway", "grafana", "prometheus", "jaeger", "nats"]));
    for (const [name, port] of published) {
      if (name === "gateway") expect(port).toBe("3000:3000");
      else expect(port, name).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
    }
  });

  it("turns Grafana's anonymous access and sign-up off and takes the admin password from the operator (no default)", () => {
    const grafana = compose.services.grafana.environment as Record<string, string>;
    expect(grafana.GF_AUTH_ANONYMOUS_ENABLED).toBe("false");
    expect(grafana.GF_AUTH_ANONYMOUS_ORG_ROLE).toBeUndefined();
    expect(grafana.GF_USERS_ALLOW_SIGN_UP).toBe("false");
    expect(grafana.GF_SECURITY_ADMIN_PASSWORD).toMatch(/^\$\{GRAFANA_ADMIN_PASSWORD:\?set GRAFANA_ADMIN_PASSWORD\b[^}]*\}$/);
  });

  describe("the Dockerfile", () => {
    const dockerfile = readFileSync(join(repoRoot, "Dockerfile"), "utf8");
    /** Stage name -> its instructions (comments dropped, continuation lines joined). */
    const stages = new Map(
      dockerfile
        .replace(/^#.*\n/gm, "")
        .replace(/\\\n\s*/g, " ")
        .split(/^(?=FROM )/m)
        .filter((stage) => stage.startsWith("FROM "))
        .map((stage) => [/^FROM \S+ AS (\S+)/.exec(stage)?.[1] ?? "", stage] as const),
    );
    const runtime = [...stages.values()].at(-1)!;

    it("builds on Node 24 LTS (node:24-bookworm-slim) in every stage", () => {
      const froms = dockerfile.match(/^FROM .*$/gm) ?? [];
      expect(froms.length).toBeGreaterThanOrEqual(3);
      for (const from of froms) expect(from).toMatch(/^FROM node:24-bookworm-slim AS [\w-]+$/);
    });

    it("builds the bundles in a build stage and ends in a runtime stage holding production dependencies only", () => {
      expect([...stages.keys()].at(-1)).toBe("runtime");
      const build = stages.get("build")!;
      expect(build).toMatch(/RUN .*node scripts\/build-services\.mjs/);
      expect(build).toMatch(/RUN .*node scripts\/build-image-tools\.mjs/);
      // `npm install` rather than `npm ci` (scripts/bootstrap.mjs says why); `--omit=optional` drops what the lockfile
      // marks devOptional (vitest, vite, tsx and esbuild through better-auth's optional peer).
      const installs = runtime.match(/\bnpm (ci|install)\b[^&\n]*/g) ?? [];
      expect(installs.length).toBe(1);
      expect(installs[0]).toMatch(/--omit=dev\b/);
      expect(installs[0]).toMatch(/--omit=optional\b/);
      // No sources and no build tools: the runtime copies the build stage's outputs, each at its place in the tree.
      expect(runtime).not.toMatch(/^COPY (?!--from=)(?!deploy\/probes\/nats-reachable\.mjs )/m);
      for (const service of SERVICES) expect(runtime).toContain(`COPY --from=build /app/services/${service}/dist ./services/${service}/dist`);
      expect(runtime).toContain("COPY --from=build /app/apps/dashboard/dist ./apps/dashboard/dist");
      expect(runtime).toContain("COPY --from=build /app/deploy/probes/dist ./deploy/probes/dist");
    });

    it("leaves out of the runtime stage every build and test tool: the lockfile marks each dev (or devOptional)", () => {
      const lock = JSON.parse(readFileSync(join(repoRoot, "package-lock.json"), "utf8")) as { packages: Record<string, Doc> };
      for (const tool of ["esbuild", "vite", "tsx", "vitest", "typescript", "playwright-core", "@bufbuild/buf", "ts-proto", "s3rver"]) {
        const entry = lock.packages[`node_modules/${tool}`];
        expect(entry, tool).toBeDefined();
        expect(entry!.dev === true || entry!.devOptional === true, `${tool} is installed by --omit=dev --omit=optional`).toBe(true);
      }
    });

    it("installs ffmpeg, bubblewrap and tini in the runtime stage and runs SERVICE's bundle as plain node", () => {
      expect(runtime).toMatch(/apt-get install [^&]*\bffmpeg\b/);
      expect(runtime).toMatch(/apt-get install [^&]*\bbubblewrap\b/);
      expect(runtime).toMatch(/apt-get install [^&]*\btini\b/);
      expect(runtime).toContain(`exec node ${SERVICE_NODE_FLAGS.join(" ")} services/\${SERVICE}/dist/main.mjs`);
      expect(runtime).toMatch(/^USER node$/m);
      expect(dockerfile).not.toMatch(/--import tsx/);
    });

    it("gives compose's health checks programs the runtime image holds, none through tsx", () => {
      const buildTools = readFileSync(join(repoRoot, "scripts", "build-image-tools.mjs"), "utf8");
      for (const service of SERVICES) {
        const test = (compose.services[service].healthcheck.test as string[]).slice(1);
        expect(test, service).not.toContain("tsx");
        if (test[0] !== "node" || test[1] === "-e") continue;
        const script = test[1]!;
        const shipped = script.startsWith("deploy/probes/dist/") ? buildTools.includes(`'${script}'`) : runtime.includes(`COPY ${script} `);
        expect(shipped, `${service}: ${script}`).toBe(true);
      }
    });
  });
});

describe("NATS users and permissions in the deploy configs", () => {
  const NATS_USERS_OF_SERVICES = SERVICES;
  const statefulSet = () => named("StatefulSet", "nats")!;

  it("ships the authorization.conf generated from libs/bus/src/nats-permissions.ts (npm run nats:config)", () => {
    expect(readFileSync(join(repoRoot, DEPLOY_AUTHORIZATION_FILE), "utf8")).toBe(deployNatsAuthorization());
  });

  it("includes it in the cluster's config, mounted beside nats.conf, each password from the nats-users Secret", () => {
    expect(named("ConfigMap", "nats-config")!.data["nats.conf"]).toMatch(/^\s*include "authorization\.conf"$/m);
    const kustomization = parse(readFileSync(join(deployDir, "nats", "kustomization.yaml"), "utf8")) as Doc;
    expect(kustomization.configMapGenerator).toContainEqual(expect.objectContaining({ name: "nats-authorization", files: ["authorization.conf"] }));
    const sources = (statefulSet().spec.template.spec.volumes as Doc[]).find((volume) => volume.name === "config")!.projected.sources as Doc[];
    expect(sources.map((source) => source.configMap.name).sort()).toEqual(["nats-authorization", "nats-config"]);
    const env = containerOf(statefulSet()).env as Doc[];
    const secret = named("Secret", "nats-users")!;
    for (const user of NATS_USERS) {
      expect(env.find((entry) => entry.name === natsPasswordVariable(user))?.valueFrom?.secretKeyRef, user).toEqual({ name: "nats-users", key: user });
      expect(secret.stringData[user], user).toBeDefined();
    }
  });

  it.each(NATS_USERS_OF_SERVICES)("connects %s to NATS as its own user, in Kubernetes and in compose", (service) => {
    const env = containerOf(serviceDeployment(service)).env as Doc[];
    expect(env.find((entry) => entry.name === "NATS_USER")?.value).toBe(service);
    expect(env.find((entry) => entry.name === "NATS_PASSWORD")?.valueFrom?.secretKeyRef).toEqual({ name: "nats-users", key: service });
    const compose = parse(readFileSync(join(repoRoot, "docker-compose.yml"), "utf8"), { merge: true }) as Doc;
    const variable = natsPasswordVariable(service);
    expect(compose.services[service].environment.NATS_USER).toBe(service);
    expect(compose.services[service].environment.NATS_PASSWORD).toMatch(new RegExp(`^\\$\\{${variable}:\\?`));
    expect(compose.services.nats.environment[variable]).toMatch(new RegExp(`^\\$\\{${variable}:\\?`));
  });

  it("runs compose's NATS with the same users, published on the host's loopback only", () => {
    const compose = parse(readFileSync(join(repoRoot, "docker-compose.yml"), "utf8"), { merge: true }) as Doc;
    expect(compose.services.nats.volumes).toContain("./deploy/nats/authorization.conf:/etc/nats/authorization.conf:ro");
    expect(compose.services.nats.volumes).toContain("./deploy/nats/compose.conf:/etc/nats/nats.conf:ro");
    expect(readFileSync(join(deployDir, "nats", "compose.conf"), "utf8")).toMatch(/^include "authorization\.conf"$/m);
    for (const port of compose.services.nats.ports as string[]) expect(port).toMatch(/^127\.0\.0\.1:/);
  });
});

describe("network policies", () => {
  const policies = ofKind("NetworkPolicy");
  const labelsOf = (name: string): Record<string, string> => {
    const workload = named("Deployment", name) ?? named("StatefulSet", name);
    return workload!.spec.template.metadata.labels as Record<string, string>;
  };
  const selects = (selector: Doc | undefined, labels: Record<string, string>) =>
    Object.entries((selector?.matchLabels ?? {}) as Record<string, string>).every(([key, value]) => labels[key] === value);
  const policiesOf = (name: string, type: "Ingress" | "Egress") =>
    policies.filter((policy) => (policy.spec.policyTypes as string[]).includes(type) && selects(policy.spec.podSelector, labelsOf(name)));
  const portAllowed = (ports: Doc[] | undefined, port: number) => !ports || ports.some((each) => each.port === port);
  /** A peer of a rule in this namespace: a podSelector without a namespaceSelector. */
  const peerSelectsPod = (peer: Doc, labels: Record<string, string>) => peer.podSelector !== undefined && peer.namespaceSelector === undefined && selects(peer.podSelector, labels);

  /** Both ends agree: `from`'s egress and `to`'s ingress allow the connection on `port`. */
  const flowAllowed = (from: string, to: string, port: number) =>
    policiesOf(from, "Egress").some((policy) => ((policy.spec.egress ?? []) as Doc[]).some((rule) => portAllowed(rule.ports, port) && (!rule.to || (rule.to as Doc[]).some((peer) => peerSelectsPod(peer, labelsOf(to)))))) &&
    policiesOf(to, "Ingress").some((policy) => ((policy.spec.ingress ?? []) as Doc[]).some((rule) => portAllowed(rule.ports, port) && (!rule.from || (rule.from as Doc[]).some((peer) => peerSelectsPod(peer, labelsOf(from))))));

  const ipv4 = (address: string) => address.split(".").reduce((value, octet) => value * 256 + Number(octet), 0);
  const inCidr = (address: string, cidr: string) => {
    const [base, bits] = cidr.split("/") as [string, string];
    if (base.includes(":") !== address.includes(":")) return false;
    if (address.includes(":")) return cidr === "::/0";
    const size = 2 ** (32 - Number(bits));
    return Math.floor(ipv4(address) / size) === Math.floor(ipv4(base) / size);
  };
  /** Whether some egress rule of `from` lets it open `address:port` by IP (ipBlock, or a rule with no `to` at all). */
  const egressToAddress = (from: string, address: string, port: number) =>
    policiesOf(from, "Egress").some((policy) =>
      ((policy.spec.egress ?? []) as Doc[]).some(
        (rule) =>
          portAllowed(rule.ports, port) &&
          (!rule.to || (rule.to as Doc[]).some((peer) => peer.ipBlock && inCidr(address, peer.ipBlock.cidr) && !((peer.ipBlock.except ?? []) as string[]).some((except) => inCidr(address, except))))),
    );

  /** Addresses in the cluster's and the VPC's ranges, the cloud metadata endpoint, loopback, CGNAT. */
  const PRIVATE_ADDRESSES = ["10.0.0.12", "10.96.0.1", "172.16.4.2", "172.31.255.1", "192.168.1.10", "169.254.169.254", "100.64.0.7", "127.0.0.1"];

  it("denies every flow in the namespace by default", () => {
    const deny = named("NetworkPolicy", "default-deny")!;
    expect(deny.spec.podSelector).toEqual({});
    expect([...deny.spec.policyTypes].sort()).toEqual(["Egress", "Ingress"]);
    expect(deny.spec.ingress).toBeUndefined();
    expect(deny.spec.egress).toBeUndefined();
  });

  it("has a policy of its own for every workload", () => {
    for (const workload of [...ofKind("Deployment"), ...ofKind("StatefulSet")]) {
      expect(policies.filter((policy) => Object.keys(policy.spec.podSelector.matchLabels ?? {}).length > 0 && selects(policy.spec.podSelector, workload.spec.template.metadata.labels)).length, workload.metadata.name).toBeGreaterThan(0);
    }
  });

  it.each([
    ["gateway", "auth", 50051],
    ["gateway", "auth", 50061],
    ["gateway", "jobs", 50052],
    ["gateway", "webhook-dispatcher", 50053],
    ["jobs", "auth", 50051],
    ["worker", "auth", 50051],
    ["worker", "jobs", 50052],
    ["webhook-dispatcher", "auth", 50051],
    ...SERVICES.map((service) => [service, "nats", 4222] as const),
    ...SERVICES.map((service) => [service, "otel-collector", 4318] as const),
    ["nats", "nats", 6222],
  ] as const)("allows %s -> %s:%i", (from, to, port) => {
    expect(flowAllowed(from, to, port)).toBe(true);
  });

  it.each([
    ["worker", "webhook-dispatcher", 50053],
    ["worker", "gateway", 3000],
    ["worker", "nats", 6222],
    ["worker", "nats", 8222],
    ["webhook-dispatcher", "jobs", 50052],
    ["webhook-dispatcher", "gateway", 3000],
    ["jobs", "webhook-dispatcher", 50053],
    ["gateway", "nats", 6222],
    ["auth", "jobs", 50052],
  ] as const)("refuses %s -> %s:%i", (from, to, port) => {
    expect(flowAllowed(from, to, port)).toBe(false);
  });

  it("lets the worker reach the public internet for inputs but no private range, not even the cluster's DNS over TCP 80", () => {
    for (const port of [80, 443, 8080]) expect(egressToAddress("worker", "93.184.216.34", port), `public :${port}`).toBe(true);
    for (const address of PRIVATE_ADDRESSES) {
      for (const port of [80, 443, 4222, 5432, 6379, 50051, 8222]) expect(egressToAddress("worker", address, port), `${address}:${port}`).toBe(false);
    }
  });

  it("lets the webhook dispatcher reach customers' webhooks on the public internet but no private range except its database port", () => {
    for (const port of [80, 443, 8443]) expect(egressToAddress("webhook-dispatcher", "93.184.216.34", port)).toBe(true);
    for (const address of PRIVATE_ADDRESSES) {
      for (const port of [80, 443, 4222, 6379, 50051]) expect(egressToAddress("webhook-dispatcher", address, port), `${address}:${port}`).toBe(false);
    }
  });

  it("lets the gateway and the worker reach the object store's placeholder range over HTTPS, and not auth or jobs", () => {
    const store = "192.0.2.10";
    for (const service of ["gateway", "worker"]) expect(egressToAddress(service, store, 443), service).toBe(true);
    // The worker's public-internet rule covers the range on any port; the gateway has no such rule.
    expect(egressToAddress("gateway", store, 80)).toBe(false);
    for (const service of ["auth", "jobs"]) expect(egressToAddress(service, store, 443), service).toBe(false);
  });

  it("keeps the gateway, auth and jobs off the internet (only their database or Redis port by address)", () => {
    for (const service of ["gateway", "auth", "jobs"]) {
      for (const port of [80, 443]) expect(egressToAddress(service, "93.184.216.34", port), `${service}:${port}`).toBe(false);
    }
  });
});
