// grpc-js client tests of an externalscaler.ExternalScaler server.
//
//   KGS_GRPC_ADDR=127.0.0.1:6000 node --test tests/integration/js/
//
// Environment:
//   KGS_GRPC_ADDR        host:port of the server (required; without it every test is skipped)
//   KGS_METADATA         JSON object sent as scalerMetadata (default {})
//   KGS_EXPECT           optional JSON object with exact expectations, any of
//                        metricValueFloat, metricValue, targetSizeFloat, targetSize, active
//   KGS_TLS_CA           PEM file: use TLS, verifying the server with this CA
//   KGS_TLS_CERT/KEY     PEM files: client certificate for mTLS
//   KGS_TLS_SERVER_NAME  name to verify instead of the host of KGS_GRPC_ADDR
// The protos are loaded at run time from proto/ at the repository root.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const ADDR = process.env.KGS_GRPC_ADDR || '';
const SKIP = ADDR ? false : 'KGS_GRPC_ADDR is not set';
const METADATA = JSON.parse(process.env.KGS_METADATA || '{}');
const EXPECT = JSON.parse(process.env.KGS_EXPECT || '{}');
const TLS_CA = process.env.KGS_TLS_CA || '';
const TEST_TIMEOUT = 5000; // ms, every test
const CALL_DEADLINE = 3000; // ms, every call (KEDA's HPA path uses 3 s)

const PROTO_DIR = path.resolve(__dirname, '..', '..', '..', 'proto');
const loadOpts = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true };
const scalerPkg = grpc.loadPackageDefinition(
  protoLoader.loadSync(path.join(PROTO_DIR, 'externalscaler.proto'), loadOpts));
const healthPkg = grpc.loadPackageDefinition(
  protoLoader.loadSync(path.join(PROTO_DIR, 'health.proto'), loadOpts));

function credentials() {
  if (!TLS_CA) return grpc.credentials.createInsecure();
  const read = (v) => (process.env[v] ? fs.readFileSync(process.env[v]) : null);
  return grpc.credentials.createSsl(fs.readFileSync(TLS_CA), read('KGS_TLS_KEY'), read('KGS_TLS_CERT'));
}

function channelOptions() {
  const o = {};
  if (process.env.KGS_TLS_SERVER_NAME) {
    o['grpc.ssl_target_name_override'] = process.env.KGS_TLS_SERVER_NAME;
    o['grpc.default_authority'] = process.env.KGS_TLS_SERVER_NAME;
  }
  return o;
}

let scaler = null;
let health = null;
if (ADDR) {
  scaler = new scalerPkg.externalscaler.ExternalScaler(ADDR, credentials(), channelOptions());
  // The health client shares the channel, as KEDA-style clients share one connection.
  health = new healthPkg.grpc.health.v1.Health(ADDR, credentials(),
    { ...channelOptions(), channelOverride: scaler.getChannel() });
}

const ref = () => ({ name: 'js-so', namespace: 'default', scalerMetadata: METADATA });
const deadline = () => new Date(Date.now() + CALL_DEADLINE);

function unary(client, method, req) {
  return new Promise((resolve, reject) => {
    client[method](req, { deadline: deadline() }, (err, res) => (err ? reject(err) : resolve(res)));
  });
}

function expectCode(promise, code) {
  return promise.then(
    (res) => assert.fail(`expected status ${code}, got a response ${JSON.stringify(res)}`),
    (err) => assert.equal(err.code, code, `status ${err.code} (${err.details}), want ${code}`));
}

test.after(() => {
  if (scaler) scaler.close();
  if (health) health.close();
});

test('GetMetricSpec returns one positive target', { skip: SKIP, timeout: TEST_TIMEOUT }, async () => {
  const r = await unary(scaler, 'GetMetricSpec', ref());
  assert.ok(r.metricSpecs.length >= 1, 'metricSpecs is empty');
  const s = r.metricSpecs[0];
  assert.match(s.metricName, /^[a-z0-9_-]+$/);
  assert.ok(s.targetSizeFloat > 0, `targetSizeFloat ${s.targetSizeFloat}`);
  assert.equal(s.targetSize, Math.max(1, Math.ceil(s.targetSizeFloat)));
  if ('targetSizeFloat' in EXPECT) assert.equal(s.targetSizeFloat, EXPECT.targetSizeFloat);
  if ('targetSize' in EXPECT) assert.equal(s.targetSize, EXPECT.targetSize);
});

test('GetMetrics for the spec\'s metric name', { skip: SKIP, timeout: TEST_TIMEOUT }, async () => {
  const spec = await unary(scaler, 'GetMetricSpec', ref());
  const name = spec.metricSpecs[0].metricName;
  const r = await unary(scaler, 'GetMetrics', { scaledObjectRef: ref(), metricName: name });
  assert.equal(r.metricValues.length, 1);
  const v = r.metricValues[0];
  assert.ok(v.metricValueFloat >= 0, `metricValueFloat ${v.metricValueFloat}`);
  assert.equal(v.metricValue, Math.round(v.metricValueFloat));
  if ('metricValueFloat' in EXPECT) assert.equal(v.metricValueFloat, EXPECT.metricValueFloat);
  if ('metricValue' in EXPECT) assert.equal(v.metricValue, EXPECT.metricValue);
});

test('IsActive answers a boolean', { skip: SKIP, timeout: TEST_TIMEOUT }, async () => {
  const r = await unary(scaler, 'IsActive', ref());
  assert.equal(typeof r.result, 'boolean');
  if ('active' in EXPECT) assert.equal(r.result, EXPECT.active);
});

test('StreamIsActive sends its first message at once', { skip: SKIP, timeout: TEST_TIMEOUT }, async () => {
  const t0 = Date.now();
  const call = scaler.StreamIsActive(ref());
  const first = await new Promise((resolve, reject) => {
    call.once('data', resolve);
    call.once('error', reject);
    call.once('end', () => reject(new Error('stream ended before its first message')));
  });
  const ms = Date.now() - t0;
  assert.equal(typeof first.result, 'boolean');
  if ('active' in EXPECT) assert.equal(first.result, EXPECT.active);
  assert.ok(ms < 2000, `first message after ${ms} ms`);
  const ended = new Promise((resolve) => call.on('error', resolve));
  call.cancel();
  const err = await ended;
  assert.equal(err.code, grpc.status.CANCELLED);
});

test('StreamMetricSpec is UNIMPLEMENTED', { skip: SKIP, timeout: TEST_TIMEOUT }, async () => {
  const call = scaler.StreamMetricSpec(ref(), { deadline: deadline() });
  const err = await new Promise((resolve, reject) => {
    call.on('data', (m) => reject(new Error(`unexpected message ${JSON.stringify(m)}`)));
    call.on('error', resolve);
    call.on('end', () => reject(new Error('stream ended without a status error')));
  });
  assert.equal(err.code, grpc.status.UNIMPLEMENTED);
});

test('an unknown method is UNIMPLEMENTED', { skip: SKIP, timeout: TEST_TIMEOUT }, async () => {
  const id = (b) => b;
  await expectCode(new Promise((resolve, reject) => {
    scaler.makeUnaryRequest('/externalscaler.ExternalScaler/NoSuchMethod', id, id, Buffer.alloc(0),
      { deadline: deadline() }, (err, res) => (err ? reject(err) : resolve(res)));
  }), grpc.status.UNIMPLEMENTED);
});

test('health Check is SERVING', { skip: SKIP, timeout: TEST_TIMEOUT }, async () => {
  const r = await unary(health, 'Check', { service: '' });
  assert.equal(r.status, 'SERVING');
});

test('TLS carries the calls', { skip: SKIP || (TLS_CA ? false : 'KGS_TLS_CA is not set'), timeout: TEST_TIMEOUT }, async () => {
  // Every other test already ran over TLS; this one proves a fresh secure
  // channel connects and that the channel really is a TLS one.
  const c = new scalerPkg.externalscaler.ExternalScaler(ADDR, credentials(), channelOptions());
  try {
    const r = await unary(c, 'IsActive', ref());
    assert.equal(typeof r.result, 'boolean');
    const plain = new scalerPkg.externalscaler.ExternalScaler(ADDR, grpc.credentials.createInsecure());
    try {
      // A plaintext client on the TLS port gets GOAWAY INADEQUATE_SECURITY,
      // which grpc-js (like grpc-go) maps to PERMISSION_DENIED.
      await assert.rejects(unary(plain, 'IsActive', ref()),
        (e) => e.code === grpc.status.PERMISSION_DENIED && /not secure/i.test(e.details));
    } finally {
      plain.close();
    }
  } finally {
    c.close();
  }
});
