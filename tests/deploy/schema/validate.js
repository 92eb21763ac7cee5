#!/usr/bin/env node
// Validates Kubernetes objects against the real schemas:
//  - built-in kinds, ServiceMonitor and cert-manager kinds with npm's
//    kubernetes-models (Kubernetes' OpenAPI schemas, and the models its
//    project generates from the prometheus-operator and cert-manager CRDs);
//  - KEDA's ScaledObject and ScaledJob against keda_schema.js, our table of
//    the fields KEDA's CRDs accept, with ajv, as the API server does: fields
//    the table does not list are errors (kubectl's default
//    --validate=strict), int32 and int-or-string quantities are enforced,
//    and metadata is checked as an ObjectMeta.
// A kind with neither fails, naming it, unless --allow-skip KIND is given;
// then it is reported as skipped, by name.
//
// Usage: node validate.js --node-modules DIR INPUT.json [--allow-skip KIND]...
// INPUT.json: {"docs": [{"source": "...", "doc": {...}}]}
// Prints one line per object ("ok", "FAIL" + one indented line per error,
// "skip") and a summary; exits 1 when any object fails, 2 on a usage error,
// 3 on an internal error (a table ajv cannot compile).
'use strict';

const fs = require('fs');
const path = require('path');
const { createRequire } = require('module');

function usage(msg) {
  process.stderr.write(`validate.js: ${msg}\n` +
    'usage: node validate.js --node-modules DIR INPUT.json [--allow-skip KIND]...\n');
  process.exit(2);
}

const args = process.argv.slice(2);
let nodeModules = null;
let input = null;
const allowSkip = new Set();
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--node-modules' && i + 1 < args.length) nodeModules = args[++i];
  else if (args[i] === '--allow-skip' && i + 1 < args.length) allowSkip.add(args[++i]);
  else if (args[i].startsWith('-')) usage(`unknown option ${args[i]}`);
  else if (input === null) input = args[i];
  else usage(`unexpected argument ${args[i]}`);
}
if (!nodeModules || !input) usage('--node-modules and INPUT.json are required');
if (!fs.existsSync(path.join(nodeModules, 'kubernetes-models'))) {
  usage(`${nodeModules} has no kubernetes-models: run \`make js-deps\` ` +
        '(npm ci --prefix tests/integration/js)');
}
const req = createRequire(path.join(path.resolve(nodeModules), '..', 'package.json'));
const Ajv = req('ajv');
const { ObjectMeta } = req('@kubernetes-models/apimachinery/apis/meta/v1/ObjectMeta');
const kedaSchema = require('./keda_schema.js');

// npm packages whose modules are named by apiVersion ("apps/v1", "v1").
const MODEL_PACKAGES = [
  'kubernetes-models',
  '@kubernetes-models/prometheus-operator',
  '@kubernetes-models/cert-manager',
];

function versionOf(pkg) {
  return req(`${pkg}/package.json`).version;
}

// The kubernetes-models class for apiVersion/kind, with the package it is
// from, or null.
function modelFor(apiVersion, kind) {
  for (const pkg of MODEL_PACKAGES) {
    let mod;
    try {
      mod = req(`${pkg}/${apiVersion}`);
    } catch (e) {
      if (e.code === 'MODULE_NOT_FOUND' || e.code === 'ERR_PACKAGE_PATH_NOT_EXPORTED') continue;
      throw e;
    }
    const cls = mod[kind];
    if (typeof cls === 'function' && cls.apiVersion === apiVersion && cls.kind === kind) {
      return { cls, from: `${pkg}@${versionOf(pkg)} ${apiVersion} ${kind}` };
    }
  }
  return null;
}

// "batch/v1 JobSpec": a kubernetes-models type that is not a top-level kind.
function modelType(ref) {
  const [apiVersion, type] = ref.split(' ');
  const mod = req(`kubernetes-models/${apiVersion}`);
  if (typeof mod[type] !== 'function') throw new Error(`kubernetes-models has no ${ref}`);
  return mod[type];
}

// Unknown fields. kubernetes-models' validators, like ajv's for schemas
// without additionalProperties: false, let a field no schema lists pass; the
// API server drops it and kubectl (--validate=strict, its default) refuses
// it. So the object is validated through proxies that record which fields
// the generated validator reads: it reads every property its schema
// declares, present or not, and enumerates the keys of a map (labels,
// annotations, resources). A key of an object the validator read from, but
// neither read nor enumerated, is in no schema: an unknown field.
function traced(value, path, log) {
  const rec = { path, value, read: new Set(), listed: false, kids: new Map() };
  log.push(rec);
  return new Proxy(value, {
    get(t, k, r) {
      const v = Reflect.get(t, k, r);
      if (typeof k !== 'string') return v;
      rec.read.add(k);
      if (!Object.prototype.hasOwnProperty.call(t, k) || v === null || typeof v !== 'object') return v;
      if (!rec.kids.has(k)) rec.kids.set(k, traced(v, `${path}/${k}`, log));
      return rec.kids.get(k);
    },
    has(t, k) {
      if (typeof k === 'string') rec.read.add(k);
      return Reflect.has(t, k);
    },
    ownKeys(t) {
      rec.listed = true;
      return Reflect.ownKeys(t);
    },
  });
}

function unknownFields(log, base) {
  const out = [];
  for (const rec of log) {
    if (Array.isArray(rec.value) || rec.listed || rec.read.size === 0) continue;
    for (const k of Object.keys(rec.value)) {
      if (!rec.read.has(k)) out.push(`${base}${rec.path}: unknown field "${k}"`);
    }
  }
  return out;
}

function ajvMessage(base, x) {
  if (x.params && x.params.whole) return x.message;
  return `${base}${x.instancePath || ''}: ${x.message}` +
    (x.params && x.params.additionalProperty ? ` (${x.params.additionalProperty})` : '') +
    (x.params && x.params.allowedValues ? ` (${x.params.allowedValues.join(', ')})` : '');
}

// The errors of kubernetes-models class Cls for data ("/path: message"),
// unknown fields included; base prefixes every path.
function modelErrors(Cls, data, base) {
  const plain = new Cls(data).toJSON();
  const log = [];
  let errs = [];
  try {
    Cls.prototype.validate.call(traced(plain, '', log));
  } catch (e) {
    if (!Array.isArray(e.errors)) throw e;
    errs = e.errors.map((x) => ajvMessage(base, x));
  }
  return errs.concat(unknownFields(log, base));
}

// ---- KEDA's kinds: keda_schema.js, compiled with ajv

const INT32 = { min: -2147483648, max: 2147483647 };
// A Kubernetes quantity as a string: a signed decimal and an optional
// binary-SI (Ki..Ei), decimal-SI (n, u, m, k..E) or exponent (e3) suffix.
const DECIMAL = '(\\d+(\\.\\d*)?|\\.\\d+)';
const QUANTITY = new RegExp(`^[+-]?${DECIMAL}([KMGTPE]i|[numkMGTPE]|[eE][+-]?${DECIMAL})?$`);

function makeAjv() {
  const ajv = new Ajv({ allErrors: true, strict: true, strictTypes: false, strictRequired: false });
  ajv.addFormat('int32', {
    type: 'number',
    validate: (n) => Number.isInteger(n) && n >= INT32.min && n <= INT32.max,
  });
  // keda_schema.js's quantity: int-or-string, the string a quantity.
  ajv.addKeyword({
    keyword: 'kgsQuantity',
    schemaType: 'boolean',
    validate: function q(on, data) {
      if (!on || Number.isInteger(data) || (typeof data === 'string' && QUANTITY.test(data))) return true;
      q.errors = [{ message: 'must be an integer or a quantity string (e.g. "0.05", "100m", "1Ki")' }];
      return false;
    },
    errors: true,
  });
  // keda_schema.js's model(): a subtree checked by a kubernetes-models type.
  ajv.addKeyword({
    keyword: 'kgsModel',
    schemaType: 'string',
    validate: function model(ref, data, parentSchema, cxt) {
      const errs = modelErrors(modelType(ref), data, cxt.instancePath);
      if (!errs.length) return true;
      // Each message names its own path already (ajvMessage: params.whole).
      model.errors = errs.map((m) => ({ instancePath: cxt.instancePath, message: `${m} (${ref})`,
        params: { whole: true } }));
      return false;
    },
    errors: true,
  });
  return ajv;
}

// "apiVersion kind" -> {validate, from} for each kind keda_schema.js has.
function loadKeda() {
  const ajv = makeAjv();
  const byKind = new Map();
  for (const key of kedaSchema.kinds) {
    byKind.set(key, { validate: ajv.compile(kedaSchema.toJsonSchema(key)), from: `${kedaSchema.source} ${key}` });
  }
  return byKind;
}

// ajv's errors for data, each naming the path, the rule and the bad value.
function ajvErrors(errors, data) {
  return errors.map((e) => {
    const m = ajvMessage('', e);
    const v = valueAt(data, e.instancePath || '');
    if (v === undefined || (v !== null && typeof v === 'object') || e.keyword === 'kgsModel') return m;
    return `${m}, not ${JSON.stringify(v)}`;
  });
}

// The value at a JSON pointer ("/spec/triggers/0"), or undefined.
function valueAt(data, pointer) {
  let v = data;
  for (const part of pointer.split('/').slice(1)) {
    if (v === null || typeof v !== 'object') return undefined;
    v = v[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return v;
}

// ---- main

process.on('uncaughtException', (e) => {
  process.stderr.write(`validate.js: internal error: ${e.stack || e}\n`);
  process.exit(3);
});
const data = JSON.parse(fs.readFileSync(input, 'utf8'));
const keda = loadKeda();
let failed = 0;
let passed = 0;
const skipped = [];
for (const { source, doc } of data.docs) {
  const apiVersion = doc && doc.apiVersion;
  const kind = doc && doc.kind;
  const name = `${source}: ${kind}/${(doc && doc.metadata && doc.metadata.name) || '?'}`;
  let errs;
  let how;
  const table = keda.get(`${apiVersion} ${kind}`);
  if (!apiVersion || !kind) {
    errs = ['/: no apiVersion or kind'];
    how = 'none';
  } else if (table) {
    how = table.from;
    errs = table.validate(doc) ? [] : ajvErrors(table.validate.errors, doc);
    if (doc.metadata && typeof doc.metadata === 'object') {
      errs = errs.concat(modelErrors(ObjectMeta, doc.metadata, '/metadata'));
    }
  } else {
    const m = modelFor(apiVersion, kind);
    if (!m) {
      if (allowSkip.has(kind)) {
        skipped.push(name);
        console.log(`skip ${name}: no schema for ${apiVersion} ${kind}`);
        continue;
      }
      errs = [`no schema for ${apiVersion} ${kind}: neither kubernetes-models nor ${kedaSchema.source} ` +
              `has it (add it to ${kedaSchema.source}, or pass --allow-skip ${kind})`];
      how = 'none';
    } else {
      how = m.from;
      errs = modelErrors(m.cls, doc, '');
    }
  }
  if (errs.length) {
    failed++;
    console.log(`FAIL ${name} (${how})`);
    for (const e of errs) console.log(`     ${e}`);
  } else {
    passed++;
    console.log(`ok   ${name} (${how})`);
  }
}
console.log(`${passed} valid, ${failed} invalid, ${skipped.length} skipped` +
            (skipped.length ? `: ${skipped.join('; ')}` : ''));
process.exit(failed ? 1 : 0);
