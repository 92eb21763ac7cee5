// KEDA's ScaledObject and ScaledJob (keda.sh/v1alpha1): the fields KEDA
// accepts, their types, which are required and which values are allowed,
// written as a table in our own notation. validate.js turns each kind into a
// JSON schema for ajv (toJsonSchema below); every object is closed, so a
// field the table does not list is an error, as under kubectl's default
// --validate=strict.
//
// What the table states, and where it was read (facts, not a copy):
//  - ScaledObject: KEDA's generated CRD (controller-gen v0.16.5) as the OLM
//    bundle ships it, kedacore/keda-olm-operator
//    bundle/manifests/keda.sh_scaledobjects.yaml at 89c79359829253df9ba6bf026a1ea2984bc26979
//    (the bundle copies KEDA's CRD and adds only labels; unlike older copies
//    of the file it has initialCooldownPeriod, advanced.scalingModifiers,
//    fallback.behavior, useCachedMetrics and the HPA's tolerance).
//  - ScaledJob: kedacore/keda config/crd/bases/keda.sh_scaledjobs.yaml at
//    09cd60c3dd05cb38b7506a59e678094fccb9dbe7 (same controller-gen).
//    Its spec.jobTargetRef is Kubernetes' batch/v1 JobSpec, checked here with
//    kubernetes-models' JobSpec (model() below).
//  - Allowed values the CRD leaves as plain strings, from who reads them: the
//    HPA KEDA creates (a trigger's metricType, behavior policies), KEDA's
//    operator (authenticationRef.kind) and KEDA's ScaledJob docs
//    (keda.sh/docs/latest/reference/scaledjob-spec: scalingStrategy, rollout).
//    Each such field says so. Where KEDA reads an unknown value as the
//    default, we refuse it anyway: in what we ship, it is a typo.
//  - ClusterTriggerAuthentication: kedacore/keda
//    config/crd/bases/keda.sh_clustertriggerauthentications.yaml at v2.20.2
//    (8b4f083ca8c8c2baf8477e322bd4d16ac4dfa09a is the snapshot read): spec is
//    required; secretTargetRef items need parameter, name and key (what the
//    chart ships); the other ways to authenticate are listed, their content
//    not checked here.
//  - The CRDs have no CEL (x-kubernetes-validations) rules; neither has this.
//
// To update for a newer KEDA: read the same two files at a newer commit (and
// the docs pages named above), change the table where a field was added,
// removed or retyped, update the commits above, and add a case for each new
// field to check_schemas.py's must-pass list. Then run
// `ctest -R deploy_schemas`: it validates everything we ship, and its
// self-test expects each broken field refused and each valid KEDA field
// accepted.
'use strict';

// ---- the notation
//
// A field's type is one of the values or calls below. obj({...}) lists an
// object's fields; a name ending in "!" is required.

const string = { type: 'string' };
const bool = { type: 'boolean' };
// Kubernetes' int32: an integer in [-2^31, 2^31-1] (ajv format added by validate.js).
const int32 = { type: 'integer', format: 'int32' };
// Kubernetes' int-or-string holding a quantity ("0.05", "100m", 1): our own
// ajv keyword, defined in validate.js.
const quantity = { kgsQuantity: true };
// An object whose content is not checked here: metadata (validate.js checks
// it as an ObjectMeta) and status (KEDA writes it, through the status
// subresource; the API server ignores it in what we apply).
const anyObject = { type: 'object' };

function obj(fields) {
  const properties = {};
  const required = [];
  for (const [key, type] of Object.entries(fields)) {
    const name = key.endsWith('!') ? key.slice(0, -1) : key;
    if (name !== key) required.push(name);
    properties[name] = type;
  }
  const out = { type: 'object', properties, additionalProperties: false };
  if (required.length) out.required = required;
  return out;
}
const mapOf = (type) => ({ type: 'object', additionalProperties: type });
const listOf = (type) => ({ type: 'array', items: type });
const oneOf = (...values) => ({ type: 'string', enum: values });
const between = (type, minimum, maximum) => ({ ...type, minimum, maximum });
// A subtree that is a Kubernetes type, checked with kubernetes-models' class
// for it ("batch/v1 JobSpec"), unknown fields included (validate.js).
const model = (ref) => ({ type: 'object', kgsModel: ref });

// ---- shared by both kinds

const trigger = obj({
  'type!': string, // the scaler: external, external-push, prometheus, ...
  'metadata!': mapOf(string), // every value a string: numbers are quoted
  name: string,
  // The CRD: any string. KEDA hands it to the HPA as the metric target's
  // type, and the HPA takes only these (Utilization: cpu and memory only).
  metricType: oneOf('AverageValue', 'Value', 'Utilization'),
  useCachedMetrics: bool,
  authenticationRef: obj({
    'name!': string,
    // The CRD: any string; KEDA's operator resolves only these two (empty:
    // TriggerAuthentication).
    kind: oneOf('TriggerAuthentication', 'ClusterTriggerAuthentication'),
  }),
});

function kind(spec, specRequired) {
  return obj({
    apiVersion: string,
    kind: string,
    metadata: anyObject,
    [specRequired ? 'spec!' : 'spec']: spec,
    status: anyObject,
  });
}

// ---- ScaledObject

// autoscaling/v2 HPAScalingRules, as KEDA's CRD embeds them. The CRD leaves
// a policy's type and selectPolicy plain strings; the HPA refuses others.
const hpaScalingRules = obj({
  policies: listOf(obj({
    'type!': oneOf('Pods', 'Percent'),
    'value!': int32,
    'periodSeconds!': int32,
  })),
  selectPolicy: oneOf('Max', 'Min', 'Disabled'),
  stabilizationWindowSeconds: between(int32, 0, 3600),
  tolerance: quantity, // alpha in Kubernetes (HPAConfigurableTolerance)
});

const scaledObjectSpec = obj({
  'scaleTargetRef!': obj({
    'name!': string,
    apiVersion: string,
    kind: string,
    envSourceContainerName: string,
  }),
  'triggers!': listOf(trigger),
  pollingInterval: int32, // seconds, default 30
  cooldownPeriod: int32, // seconds, default 300
  initialCooldownPeriod: int32, // seconds, default 0
  idleReplicaCount: int32,
  minReplicaCount: int32, // default 0
  maxReplicaCount: int32, // default 100
  fallback: obj({
    'failureThreshold!': int32,
    'replicas!': int32,
    // An enum in the CRD itself; default static.
    behavior: oneOf('static', 'currentReplicas', 'currentReplicasIfHigher', 'currentReplicasIfLower'),
  }),
  advanced: obj({
    restoreToOriginalReplicaCount: bool,
    horizontalPodAutoscalerConfig: obj({
      name: string,
      behavior: obj({ scaleUp: hpaScalingRules, scaleDown: hpaScalingRules }),
    }),
    scalingModifiers: obj({
      formula: string,
      target: string,
      activationTarget: string,
      metricType: oneOf('AverageValue', 'Value'), // an enum in the CRD itself
    }),
  }),
});

// ---- ScaledJob

const scaledJobSpec = obj({
  'jobTargetRef!': model('batch/v1 JobSpec'), // JobSpec requires template
  'triggers!': listOf(trigger),
  pollingInterval: int32, // seconds, default 30
  minReplicaCount: int32, // default 0
  maxReplicaCount: int32, // default 100
  successfulJobsHistoryLimit: int32, // default 100
  failedJobsHistoryLimit: int32, // default 100
  envSourceContainerName: string,
  // The CRD: plain strings. Values from KEDA's docs; KEDA reads any other
  // value as the default (first listed).
  rolloutStrategy: oneOf('default', 'gradual'), // deprecated for rollout.strategy
  rollout: obj({
    strategy: oneOf('default', 'gradual'),
    propagationPolicy: oneOf('background', 'foreground'),
  }),
  scalingStrategy: obj({
    strategy: oneOf('default', 'custom', 'accurate', 'eager'),
    customScalingQueueLengthDeduction: int32, // for strategy custom
    customScalingRunningJobPercentage: string, // a decimal, e.g. "0.5", for strategy custom
    pendingPodConditions: listOf(string), // pod condition types, e.g. Ready
    multipleScalersCalculation: oneOf('max', 'min', 'avg', 'sum'),
  }),
});

// ---- ClusterTriggerAuthentication (the chart's mTLS link: KEDA's client certificate)

const triggerAuthenticationSpec = obj({
  secretTargetRef: listOf(obj({ 'parameter!': string, 'name!': string, 'key!': string })),
  configMapTargetRef: listOf(anyObject),
  env: listOf(anyObject),
  boundServiceAccountToken: listOf(anyObject),
  filePath: string,
  podIdentity: anyObject,
  hashiCorpVault: anyObject,
  azureKeyVault: anyObject,
  awsSecretManager: anyObject,
  gcpSecretManager: anyObject,
});

// "apiVersion kind" -> the kind's table.
const KINDS = {
  'keda.sh/v1alpha1 ClusterTriggerAuthentication': kind(triggerAuthenticationSpec, true),
  'keda.sh/v1alpha1 ScaledObject': kind(scaledObjectSpec, true),
  // KEDA's ScaledJob CRD does not mark spec required (its ScaledObject CRD does).
  'keda.sh/v1alpha1 ScaledJob': kind(scaledJobSpec, false),
};

// The table's JSON schema for "apiVersion kind", or null. A deep copy, so a
// caller (ajv) cannot change the table.
function toJsonSchema(apiVersionKind) {
  const t = KINDS[apiVersionKind];
  return t ? JSON.parse(JSON.stringify(t)) : null;
}

module.exports = {
  kinds: Object.keys(KINDS),
  toJsonSchema,
  source: 'tests/deploy/schema/keda_schema.js',
};
