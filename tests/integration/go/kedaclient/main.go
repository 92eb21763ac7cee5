// kedaclient calls an external scaler the way KEDA does (grpc-go, one
// ClientConn dialled "dns:///addr" with the round_robin service config) and
// prints one JSON object per line on stdout.
//
//	kedaclient SUBCOMMAND [flags]     (flags may also come before SUBCOMMAND)
//
// Exit status: 0 when every RPC completed, with or without an error status
// (errors are printed as {"error":{"code":"UNAVAILABLE","message":"..."}});
// 2 for usage errors; 1 for local failures: bad TLS files, a TLS peer that did
// not negotiate ALPN "h2", or -max-time exceeded (printed as {"fatal":...}).
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/ioutil"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	pb "kgs/externalscaler"
)

type kv map[string]string

func (m kv) String() string { return fmt.Sprint(map[string]string(m)) }
func (m kv) Set(s string) error {
	i := strings.IndexByte(s, '=')
	if i <= 0 {
		return fmt.Errorf("want key=value, got %q", s)
	}
	m[s[:i]] = s[i+1:]
	return nil
}

var (
	fs         = flag.NewFlagSet("kedaclient", flag.ContinueOnError)
	addr       = fs.String("addr", "127.0.0.1:6000", "server host:port")
	useTLS     = fs.Bool("tls", false, "use TLS (ALPN h2 is required)")
	caFile     = fs.String("ca", "", "PEM CA bundle to verify the server (default: system roots)")
	certFile   = fs.String("cert", "", "PEM client certificate (mTLS)")
	keyFile    = fs.String("key", "", "PEM client key (mTLS)")
	serverName = fs.String("server-name", "", "TLS server name (default: host of -addr)")
	insecure   = fs.Bool("insecure", false, "skip server certificate verification (KEDA unsafeSsl)")
	name       = fs.String("name", "so", "ScaledObjectRef.name")
	namespace  = fs.String("namespace", "default", "ScaledObjectRef.namespace")
	metadata   = kv{}
	metric     = fs.String("metric", "", "metricName for metrics/load (load: default from GetMetricSpec)")
	callTO     = fs.Duration("call-timeout", 0, "deadline for unary calls (0: none, as KEDA's polling loop; the HPA path uses 3s)")
	count      = fs.Int("count", 3, "stream/health-watch: messages before cancelling")
	timeout    = fs.Duration("timeout", 10*time.Second, "stream/streams/health-watch/method: local limit; deadline: the context deadline")
	nStreams   = fs.Int("n", 0, "streams: streams to open (default 200); load: max calls (default 200000)")
	hold       = fs.Bool("hold", false, "streams: after the first messages, wait until the server ends every stream (or -timeout)")
	conc       = fs.Int("c", 32, "load: calls in flight")
	pace       = fs.Duration("pace", 0, "load: each caller's pause between calls (0: none; KEDA polls every few seconds)")
	duration   = fs.Duration("duration", 10*time.Second, "load: max duration")
	path       = fs.String("path", "/externalscaler.ExternalScaler/StreamMetricSpec", "method: full method path")
	service    = fs.String("service", "", "health: service name")
	interval   = fs.Duration("interval", 5*time.Millisecond, "watch: time between GetMetrics calls")
	wantValue  = fs.Float64("value", 0, "watch: the metricValueFloat to wait for")
	bigBytes   = fs.Int("bytes", 5*1024*1024, "big: size of the metadata value")
	maxTime    = fs.Duration("max-time", 120*time.Second, "hard limit for the whole run")
	vary       = fs.String("vary", "targetValue", "soak, and streams/big with -distinct: the metadata key set to 10+i for object i")
	distinct   = fs.Bool("distinct", false, "streams: stream i's metadata sets -vary to 10+i; big: -n calls, value i distinct")
	thenNS     = fs.String("then-namespace", "", "streams: once the -n streams are answered, open one more (the base metadata) from this namespace on the same connection and report it as \"then\"")
	nsCount    = fs.Int("namespaces", 1, "spray: call i comes from namespace <-namespace>-<i mod N> (1: -namespace itself)")
)

func init() { fs.Var(metadata, "metadata", "scalerMetadata key=value (repeatable)") }

var outMu sync.Mutex

func emit(v interface{}) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(fmt.Sprintf(`{"fatal":{"kind":"json","message":%q}}`, err.Error()))
	}
	outMu.Lock()
	os.Stdout.Write(append(b, '\n'))
	outMu.Unlock()
}

func fatal(kind, msg string) {
	emit(map[string]interface{}{"fatal": map[string]string{"kind": kind, "message": msg}})
	fmt.Fprintf(os.Stderr, "kedaclient: %s: %s\n", kind, msg)
	os.Exit(1)
}

func usage(msg string) {
	fmt.Fprintf(os.Stderr, "kedaclient: %s\n", msg)
	fmt.Fprintln(os.Stderr, `usage: kedaclient SUBCOMMAND [flags]
subcommands: poll rr spec metrics isactive stream streams method deadline cancel
             health health-watch big load watch soak
-addr a,b,... puts every address behind one ClientConn (round_robin), as a
Service with several endpoints; rr makes -count GetMetrics calls over it.`)
	fs.SetOutput(os.Stderr)
	fs.PrintDefaults()
	os.Exit(2)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func unixMs() float64 { return float64(time.Now().UnixNano()/1000) / 1000 }

// codeName gives the canonical upper-case name, e.g. DEADLINE_EXCEEDED.
func codeName(c codes.Code) string {
	switch c {
	case codes.OK:
		return "OK"
	case codes.Canceled:
		return "CANCELLED"
	case codes.Unknown:
		return "UNKNOWN"
	case codes.InvalidArgument:
		return "INVALID_ARGUMENT"
	case codes.DeadlineExceeded:
		return "DEADLINE_EXCEEDED"
	case codes.NotFound:
		return "NOT_FOUND"
	case codes.AlreadyExists:
		return "ALREADY_EXISTS"
	case codes.PermissionDenied:
		return "PERMISSION_DENIED"
	case codes.ResourceExhausted:
		return "RESOURCE_EXHAUSTED"
	case codes.FailedPrecondition:
		return "FAILED_PRECONDITION"
	case codes.Aborted:
		return "ABORTED"
	case codes.OutOfRange:
		return "OUT_OF_RANGE"
	case codes.Unimplemented:
		return "UNIMPLEMENTED"
	case codes.Internal:
		return "INTERNAL"
	case codes.Unavailable:
		return "UNAVAILABLE"
	case codes.DataLoss:
		return "DATA_LOSS"
	case codes.Unauthenticated:
		return "UNAUTHENTICATED"
	}
	return fmt.Sprintf("CODE_%d", int(c))
}

func statusOf(err error) (string, string) {
	if err == nil {
		return "OK", ""
	}
	if err == io.EOF {
		return "OK", ""
	}
	s, _ := status.FromError(err)
	if s.Code() == codes.Unavailable {
		atomic.StoreInt32(&sawUnavailable, 1)
	}
	return codeName(s.Code()), s.Message()
}

func errObj(err error) map[string]string {
	c, m := statusOf(err)
	return map[string]string{"code": c, "message": m}
}

// ---- TLS with the ALPN check grpc-go >= 1.67 enforces and 1.33 does not ----

var alpnFailure atomic.Value // string
var connected int32          // TCP connections established
var sawUnavailable int32     // some RPC ended UNAVAILABLE
var negotiated atomic.Value  // string

type alpnCreds struct {
	credentials.TransportCredentials
}

func (a alpnCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	c, ai, err := a.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil {
		return c, ai, err
	}
	ti, ok := ai.(credentials.TLSInfo)
	if !ok {
		c.Close()
		return nil, nil, errors.New("kedaclient: not a TLS connection")
	}
	if p := ti.State.NegotiatedProtocol; p != "h2" {
		msg := fmt.Sprintf("server did not negotiate ALPN \"h2\" (got %q)", p)
		alpnFailure.Store(msg)
		c.Close()
		return nil, nil, errors.New("kedaclient: " + msg)
	}
	negotiated.Store("h2")
	return c, ai, nil
}

func (a alpnCreds) Clone() credentials.TransportCredentials {
	return alpnCreds{a.TransportCredentials.Clone()}
}

func tlsConfig() *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: *insecure, ServerName: *serverName}
	if *caFile != "" {
		pem, err := ioutil.ReadFile(*caFile)
		if err != nil {
			fatal("tls", err.Error())
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			fatal("tls", "no certificate in "+*caFile)
		}
		cfg.RootCAs = pool
	}
	if (*certFile == "") != (*keyFile == "") {
		usage("-cert and -key go together")
	}
	if *certFile != "" {
		c, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			fatal("tls", err.Error())
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg
}

func dial() *grpc.ClientConn {
	opts := []grpc.DialOption{
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, "tcp", a)
			if err == nil {
				atomic.AddInt32(&connected, 1)
			} else {
				lastDialErr.Store(err.Error())
			}
			return c, err
		}),
	}
	if *useTLS {
		opts = append(opts, grpc.WithTransportCredentials(alpnCreds{credentials.NewTLS(tlsConfig())}))
	} else {
		opts = append(opts, grpc.WithInsecure())
	}
	target := "dns:///" + *addr
	if strings.Contains(*addr, ",") {
		// Several replicas behind one ClientConn, as KEDA sees a Service
		// with several endpoints: a manual resolver hands round_robin
		// every address.
		r := manual.NewBuilderWithScheme("replicas")
		var as []resolver.Address
		for _, a := range strings.Split(*addr, ",") {
			as = append(as, resolver.Address{Addr: a})
		}
		r.InitialState(resolver.State{Addresses: as})
		opts = append(opts, grpc.WithResolvers(r))
		target = "replicas:///all"
	}
	conn, err := grpc.Dial(target, opts...)
	if err != nil {
		fatal("dial", err.Error())
	}
	return conn
}

var lastDialErr atomic.Value // string

// finish adds TLS facts to a one-shot result; it exits 1 after an ALPN
// failure, or when an RPC failed UNAVAILABLE without any TCP connection.
func finish(res map[string]interface{}) {
	if v := alpnFailure.Load(); v != nil {
		if res != nil {
			emit(res)
		}
		fatal("alpn", v.(string))
	}
	if atomic.LoadInt32(&sawUnavailable) == 1 && atomic.LoadInt32(&connected) == 0 {
		if res != nil {
			emit(res)
		}
		msg := "no connection to " + *addr
		if v := lastDialErr.Load(); v != nil {
			msg = v.(string)
		}
		fatal("dial", msg)
	}
	if res != nil {
		if *useTLS {
			if v := negotiated.Load(); v != nil {
				res["alpn"] = v
			}
		}
		emit(res)
	}
}

func ref() *pb.ScaledObjectRef {
	return &pb.ScaledObjectRef{Name: *name, Namespace: *namespace, ScalerMetadata: metadata}
}

func unaryCtx() (context.Context, context.CancelFunc) {
	if *callTO > 0 {
		return context.WithTimeout(context.Background(), *callTO)
	}
	return context.WithCancel(context.Background())
}

func specsJSON(r *pb.GetMetricSpecResponse) []map[string]interface{} {
	out := []map[string]interface{}{}
	for _, s := range r.GetMetricSpecs() {
		out = append(out, map[string]interface{}{"metricName": s.MetricName, "targetSize": s.TargetSize, "targetSizeFloat": s.TargetSizeFloat})
	}
	return out
}

func valuesJSON(r *pb.GetMetricsResponse) []map[string]interface{} {
	out := []map[string]interface{}{}
	for _, v := range r.GetMetricValues() {
		out = append(out, map[string]interface{}{"metricName": v.MetricName, "metricValue": v.MetricValue, "metricValueFloat": v.MetricValueFloat})
	}
	return out
}

func callErr(call string, err error, took time.Duration) map[string]interface{} {
	return map[string]interface{}{"call": call, "error": errObj(err), "ms": ms(took)}
}

// ---- subcommands ----

// poll: KEDA's polling loop for one trigger, on one connection:
// GetMetricSpec, then GetMetrics for the spec's name, then IsActive.
func cmdPoll(c pb.ExternalScalerClient) map[string]interface{} {
	r := ref()
	ctx, cancel := unaryCtx()
	defer cancel()
	t0 := time.Now()
	spec, err := c.GetMetricSpec(ctx, r)
	tSpec := time.Since(t0)
	if err != nil {
		return callErr("GetMetricSpec", err, tSpec)
	}
	if len(spec.MetricSpecs) == 0 {
		return map[string]interface{}{"call": "GetMetricSpec", "error": map[string]string{"code": "EMPTY_SPEC", "message": "got empty metric spec"}, "ms": ms(tSpec)}
	}
	s := spec.MetricSpecs[0]
	t1 := time.Now()
	mv, err := c.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: r, MetricName: s.MetricName})
	tMet := time.Since(t1)
	if err != nil {
		return callErr("GetMetrics", err, tMet)
	}
	if len(mv.MetricValues) == 0 {
		return map[string]interface{}{"call": "GetMetrics", "error": map[string]string{"code": "EMPTY_METRICS", "message": "no metric values"}, "ms": ms(tMet)}
	}
	t2 := time.Now()
	act, err := c.IsActive(ctx, r)
	tAct := time.Since(t2)
	if err != nil {
		return callErr("IsActive", err, tAct)
	}
	v := mv.MetricValues[0]
	return map[string]interface{}{
		"metricName": s.MetricName, "targetSize": s.TargetSize, "targetSizeFloat": s.TargetSizeFloat,
		"metricValue": v.MetricValue, "metricValueFloat": v.MetricValueFloat, "active": act.Result,
		"specs": len(spec.MetricSpecs), "values": len(mv.MetricValues),
		"ms": map[string]float64{"spec": ms(tSpec), "metrics": ms(tMet), "isactive": ms(tAct)},
	}
}

// cmdRoundRobin makes -count GetMetrics calls over the one ClientConn and
// reports which peer answered each and every distinct answer: with
// round_robin over replicas, each must be asked and all must agree.
func cmdRoundRobin(c pb.ExternalScalerClient) map[string]interface{} {
	r := ref()
	ctx, cancel := unaryCtx()
	defer cancel()
	spec, err := c.GetMetricSpec(ctx, r)
	if err != nil {
		return callErr("GetMetricSpec", err, 0)
	}
	if len(spec.MetricSpecs) == 0 {
		return map[string]interface{}{"call": "GetMetricSpec", "error": map[string]string{"code": "EMPTY_SPEC", "message": "got empty metric spec"}}
	}
	req := &pb.GetMetricsRequest{ScaledObjectRef: r, MetricName: spec.MetricSpecs[0].MetricName}
	// round_robin only picks among connected subchannels: until every
	// replica's connection is up, calls go to those that are. Warm up
	// (bounded) until each address has answered once, then count.
	want := len(strings.Split(*addr, ","))
	seen := map[string]bool{}
	for deadline := time.Now().Add(5 * time.Second); len(seen) < want && time.Now().Before(deadline); {
		var p peer.Peer
		if _, err := c.GetMetrics(ctx, req, grpc.Peer(&p)); err == nil && p.Addr != nil {
			seen[p.Addr.String()] = true
		}
		time.Sleep(5 * time.Millisecond)
	}
	peers := map[string]int{}
	answers := map[string]int{}
	for i := 0; i < *count; i++ {
		var p peer.Peer
		mv, err := c.GetMetrics(ctx, req, grpc.Peer(&p))
		a := ""
		if err != nil {
			code, msg := statusOf(err)
			a = code + ": " + msg
		} else if len(mv.MetricValues) > 0 {
			a = fmt.Sprintf("%g", mv.MetricValues[0].MetricValueFloat)
		}
		answers[a]++
		if p.Addr != nil {
			peers[p.Addr.String()]++
		}
	}
	return map[string]interface{}{"call": "GetMetrics", "calls": *count, "peers": peers,
		"answers": answers}
}

func cmdSpec(c pb.ExternalScalerClient) map[string]interface{} {
	ctx, cancel := unaryCtx()
	defer cancel()
	t0 := time.Now()
	r, err := c.GetMetricSpec(ctx, ref())
	if err != nil {
		return callErr("GetMetricSpec", err, time.Since(t0))
	}
	return map[string]interface{}{"metricSpecs": specsJSON(r), "ms": ms(time.Since(t0))}
}

func cmdMetrics(c pb.ExternalScalerClient) map[string]interface{} {
	ctx, cancel := unaryCtx()
	defer cancel()
	t0 := time.Now()
	r, err := c.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: ref(), MetricName: *metric})
	if err != nil {
		return callErr("GetMetrics", err, time.Since(t0))
	}
	return map[string]interface{}{"metricValues": valuesJSON(r), "ms": ms(time.Since(t0))}
}

func cmdIsActive(c pb.ExternalScalerClient) map[string]interface{} {
	ctx, cancel := unaryCtx()
	defer cancel()
	t0 := time.Now()
	r, err := c.IsActive(ctx, ref())
	if err != nil {
		return callErr("IsActive", err, time.Since(t0))
	}
	return map[string]interface{}{"result": r.Result, "ms": ms(time.Since(t0))}
}

type recvResult struct {
	msg *pb.IsActiveResponse
	err error
}

// cmdStream prints each StreamIsActive message as it arrives, then one "end"
// line. reason: "server" (the server ended the stream; code is its status, OK
// for a clean end), "count" (N messages, then the client cancelled),
// "timeout" (-timeout passed, then the client cancelled).
func cmdStream(c pb.ExternalScalerClient) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.Now()
	st, err := c.StreamIsActive(ctx, ref())
	if err != nil {
		emit(map[string]interface{}{"end": map[string]interface{}{"reason": "server", "code": errObj(err)["code"], "message": errObj(err)["message"], "messages": 0, "t_ms": ms(time.Since(t0))}})
		return
	}
	ch := make(chan recvResult)
	go func() {
		for {
			m, err := st.Recv()
			ch <- recvResult{m, err}
			if err != nil {
				return
			}
		}
	}()
	timer := time.NewTimer(*timeout)
	n := 0
	end := func(reason string, err error) {
		code, msg := statusOf(err)
		if reason != "server" {
			code, msg = "CANCELLED", "cancelled by the client"
		}
		emit(map[string]interface{}{"end": map[string]interface{}{"reason": reason, "code": code, "message": msg, "messages": n, "t_ms": ms(time.Since(t0))}})
	}
	for {
		select {
		case r := <-ch:
			if r.err != nil {
				end("server", r.err)
				return
			}
			n++
			emit(map[string]interface{}{"t_ms": ms(time.Since(t0)), "unix_ms": unixMs(), "result": r.msg.Result})
			if *count > 0 && n >= *count {
				cancel()
				end("count", nil)
				return
			}
		case <-timer.C:
			cancel()
			end("timeout", nil)
			return
		}
	}
}

// cmdStreams opens N StreamIsActive on the one connection at once and prints
// {"opened":N,"first_messages":K,"max_first_ms":..} once every stream has its
// first message (or -timeout). With -hold it then waits until the server ends
// every stream (or -timeout from the start) and prints
// {"ended":{"OK":N,...},"still_open":K,"max_end_ms":..}.
// The -vary value of object i: 10+i, or the given value with each "{i}"
// replaced by 10+i (a distinct URL per object: -metadata
// engineEndpoint=http://h{i}.invalid/metrics).
func varied(base string, i int) string {
	if strings.Contains(base, "{i}") {
		return strings.ReplaceAll(base, "{i}", fmt.Sprintf("%d", 10+i))
	}
	return fmt.Sprintf("%d", 10+i)
}

func cmdStreams(c pb.ExternalScalerClient) {
	n := *nStreams
	if n <= 0 {
		n = 200
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.Now()
	deadline := time.After(*timeout)
	first := make(chan time.Duration, n)
	ends := make(chan error, n)
	var opened int32
	for i := 0; i < n; i++ {
		r := ref()
		if *distinct {
			md := map[string]string{}
			for k, v := range metadata {
				md[k] = v
			}
			md[*vary] = varied(md[*vary], i)
			r = &pb.ScaledObjectRef{Name: fmt.Sprintf("so-%d", i), Namespace: *namespace, ScalerMetadata: md}
		}
		go func() {
			st, err := c.StreamIsActive(ctx, r)
			if err != nil {
				ends <- err
				return
			}
			atomic.AddInt32(&opened, 1)
			got := false
			for {
				_, err := st.Recv()
				if err != nil {
					// ended before its first message: counted once, as an early end
					ends <- err
					return
				}
				if !got {
					got = true
					first <- time.Since(t0)
				}
			}
		}()
	}
	k, answered := 0, 0
	var maxFirst time.Duration
	var earlyEnds []error
wait:
	for answered < n {
		select {
		case d := <-first:
			answered++
			if d >= 0 {
				k++
				if d > maxFirst {
					maxFirst = d
				}
			}
		case err := <-ends: // failed before any message could be counted
			earlyEnds = append(earlyEnds, err)
			answered++
		case <-deadline:
			break wait
		}
	}
	res := map[string]interface{}{"opened": atomic.LoadInt32(&opened), "first_messages": k, "max_first_ms": ms(maxFirst), "t_ms": ms(time.Since(t0))}
	if *thenNS != "" {
		res["then"] = thenStream(ctx, c)
	}
	if len(earlyEnds) > 0 {
		res["first_error"] = errObj(earlyEnds[0])
		early := map[string]int{}
		for _, e := range earlyEnds {
			c, _ := statusOf(e)
			early[c]++
		}
		res["early_codes"] = early
	}
	emit(res)
	if !*hold {
		return
	}
	ended := map[string]int{}
	for _, e := range earlyEnds {
		c, _ := statusOf(e)
		ended[c]++
	}
	total := len(earlyEnds)
	var maxEnd time.Duration
	var firstErr error
wait2:
	for total < n {
		select {
		case e := <-ends:
			total++
			c, _ := statusOf(e)
			ended[c]++
			if c != "OK" && firstErr == nil {
				firstErr = e
			}
			maxEnd = time.Since(t0)
		case <-deadline:
			break wait2
		}
	}
	res2 := map[string]interface{}{"ended": ended, "still_open": n - total, "max_end_ms": ms(maxEnd)}
	if firstErr != nil {
		res2["first_error"] = errObj(firstErr)
	}
	emit(res2)
}

// thenStream opens one more StreamIsActive, from -then-namespace with the
// base metadata, on the connection the other streams use, and reports
// whether its first message came (within 10s) or how it ended.
func thenStream(ctx context.Context, c pb.ExternalScalerClient) map[string]interface{} {
	r := &pb.ScaledObjectRef{Name: "then", Namespace: *thenNS, ScalerMetadata: metadata}
	t0 := time.Now()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := c.StreamIsActive(cctx, r)
	if err == nil {
		_, err = st.Recv()
	}
	if err != nil {
		return map[string]interface{}{"error": errObj(err), "t_ms": ms(time.Since(t0))}
	}
	return map[string]interface{}{"first_message_ms": ms(time.Since(t0))}
}

// cmdSpray: -n GetMetrics calls, call i with -vary set to 10+i (distinct
// configurations) from namespace -namespace (or one of -namespaces), -c in
// flight; counts the answers by status code.
func cmdSpray(c pb.ExternalScalerClient) map[string]interface{} {
	n := *nStreams
	if n <= 0 {
		n = 1000
	}
	var next int64 = -1
	var mu sync.Mutex
	codesSeen := map[string]int{}
	var firstErr map[string]string
	var wg sync.WaitGroup
	t0 := time.Now()
	for g := 0; g < *conc; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(atomic.AddInt64(&next, 1))
				if i >= n {
					return
				}
				md := map[string]string{}
				for k, v := range metadata {
					md[k] = v
				}
				md[*vary] = varied(md[*vary], i)
				ns := *namespace
				if *nsCount > 1 {
					ns = fmt.Sprintf("%s-%d", *namespace, i%*nsCount)
				}
				r := &pb.ScaledObjectRef{Name: fmt.Sprintf("so-%d", i), Namespace: ns, ScalerMetadata: md}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := c.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: r, MetricName: "m"})
				cancel()
				code := "OK"
				if err != nil {
					code, _ = statusOf(err)
				}
				mu.Lock()
				codesSeen[code]++
				if err != nil && firstErr == nil && code != "UNAVAILABLE" {
					firstErr = errObj(err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res := map[string]interface{}{"calls": n, "codes": codesSeen, "elapsed_s": time.Since(t0).Seconds()}
	if firstErr != nil {
		res["first_error"] = firstErr
	}
	return res
}

// cmdMethod invokes any method path with an empty ScaledObjectRef and reads
// up to -count responses of any type (for UNIMPLEMENTED checks).
func cmdMethod(conn *grpc.ClientConn) map[string]interface{} {
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	t0 := time.Now()
	res := map[string]interface{}{"path": *path}
	st, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, *path)
	if err == nil {
		err = st.SendMsg(&pb.ScaledObjectRef{})
	}
	if err == nil {
		err = st.CloseSend()
	}
	n := 0
	if err == nil {
		for {
			var m emptypb.Empty
			if err = st.RecvMsg(&m); err != nil {
				break
			}
			n++
			if n >= *count {
				res["ended"] = false
				break
			}
		}
	}
	code, msg := statusOf(err)
	res["code"], res["message"], res["messages"], res["ms"] = code, msg, n, ms(time.Since(t0))
	return res
}

// cmdDeadline: StreamIsActive under a context deadline of -timeout; grpc-go
// sends it as grpc-timeout. Prints the final code.
func cmdDeadline(c pb.ExternalScalerClient) map[string]interface{} {
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	t0 := time.Now()
	n := 0
	st, err := c.StreamIsActive(ctx, ref())
	for err == nil {
		_, err = st.Recv()
		if err == nil {
			n++
		}
	}
	code, msg := statusOf(err)
	return map[string]interface{}{"code": code, "message": msg, "messages": n, "t_ms": ms(time.Since(t0))}
}

// cmdCancel: StreamIsActive, cancel after the first message, report the code
// the client then observes.
func cmdCancel(c pb.ExternalScalerClient) map[string]interface{} {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tctx, tcancel := context.WithTimeout(context.Background(), *timeout)
	defer tcancel()
	go func() { <-tctx.Done(); cancel() }()
	t0 := time.Now()
	st, err := c.StreamIsActive(ctx, ref())
	if err != nil {
		return map[string]interface{}{"code": errObj(err)["code"], "message": errObj(err)["message"], "messages": 0}
	}
	if _, err := st.Recv(); err != nil {
		c, m := statusOf(err)
		return map[string]interface{}{"code": c, "message": m, "messages": 0, "error": "stream ended before the first message"}
	}
	first := time.Since(t0)
	cancel()
	for {
		if _, err = st.Recv(); err != nil {
			break
		}
	}
	code, msg := statusOf(err)
	return map[string]interface{}{"code": code, "message": msg, "messages": 1, "first_ms": ms(first)}
}

func cmdHealth(conn *grpc.ClientConn) map[string]interface{} {
	ctx, cancel := unaryCtx()
	defer cancel()
	t0 := time.Now()
	r, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: *service})
	if err != nil {
		return callErr("Check", err, time.Since(t0))
	}
	return map[string]interface{}{"status": r.Status.String(), "ms": ms(time.Since(t0))}
}

func cmdHealthWatch(conn *grpc.ClientConn) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.Now()
	st, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{Service: *service})
	n := 0
	endLine := func(reason string, err error) {
		code, msg := statusOf(err)
		if reason != "server" {
			code, msg = "CANCELLED", "cancelled by the client"
		}
		emit(map[string]interface{}{"end": map[string]interface{}{"reason": reason, "code": code, "message": msg, "messages": n, "t_ms": ms(time.Since(t0))}})
	}
	if err != nil {
		endLine("server", err)
		return
	}
	type hr struct {
		m   *healthpb.HealthCheckResponse
		err error
	}
	ch := make(chan hr)
	go func() {
		for {
			m, err := st.Recv()
			ch <- hr{m, err}
			if err != nil {
				return
			}
		}
	}()
	timer := time.NewTimer(*timeout)
	for {
		select {
		case r := <-ch:
			if r.err != nil {
				endLine("server", r.err)
				return
			}
			n++
			emit(map[string]interface{}{"t_ms": ms(time.Since(t0)), "status": r.m.Status.String()})
			if *count > 0 && n >= *count {
				cancel()
				endLine("count", nil)
				return
			}
		case <-timer.C:
			cancel()
			endLine("timeout", nil)
			return
		}
	}
}

func cmdBig(c pb.ExternalScalerClient) map[string]interface{} {
	ctx, cancel := unaryCtx()
	defer cancel()
	md := map[string]string{}
	for k, v := range metadata {
		md[k] = v
	}
	md["big"] = strings.Repeat("x", *bigBytes)
	t0 := time.Now()
	if *distinct {
		// -n calls, one after the other, each a different map (the value's
		// first bytes are the call's number): {"codes":{..},"message":first
		// error,"calls":N,"max_ms":..}
		n := *nStreams
		if n <= 0 {
			n = 200
		}
		codes := map[string]int{}
		first := ""
		var worst time.Duration
		for i := 0; i < n; i++ {
			tag := fmt.Sprintf("%d-", i)
			md["big"] = tag + strings.Repeat("x", *bigBytes-len(tag))
			s := time.Now()
			_, err := c.GetMetrics(ctx, &pb.GetMetricsRequest{
				ScaledObjectRef: &pb.ScaledObjectRef{Name: *name, Namespace: *namespace, ScalerMetadata: md},
				MetricName:      *metric})
			if d := time.Since(s); d > worst {
				worst = d
			}
			code, msg := statusOf(err)
			codes[code]++
			if first == "" && err != nil {
				first = msg
			}
		}
		return map[string]interface{}{"codes": codes, "message": first, "calls": n, "bytes": *bigBytes,
			"max_ms": ms(worst), "ms": ms(time.Since(t0))}
	}
	_, err := c.GetMetrics(ctx, &pb.GetMetricsRequest{
		ScaledObjectRef: &pb.ScaledObjectRef{Name: *name, Namespace: *namespace, ScalerMetadata: md},
		MetricName:      *metric})
	code, msg := statusOf(err)
	return map[string]interface{}{"code": code, "message": msg, "bytes": *bigBytes, "ms": ms(time.Since(t0))}
}

// cmdLoad: -c goroutines calling GetMetrics over the one connection, each
// call under a 5 s deadline, until -n calls or -duration.
func cmdLoad(c pb.ExternalScalerClient) map[string]interface{} {
	maxCalls := int64(*nStreams)
	if maxCalls <= 0 {
		maxCalls = 200000
	}
	r := ref()
	mname := *metric
	if mname == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		spec, err := c.GetMetricSpec(ctx, r)
		cancel()
		if err != nil {
			return callErr("GetMetricSpec", err, 0)
		}
		if len(spec.MetricSpecs) > 0 {
			mname = spec.MetricSpecs[0].MetricName
		}
	}
	req := &pb.GetMetricsRequest{ScaledObjectRef: r, MetricName: mname}
	var issued int64
	stop := time.Now().Add(*duration)
	lat := make([][]time.Duration, *conc)
	errs := make([]map[string]int, *conc)
	var wg sync.WaitGroup
	t0 := time.Now()
	for g := 0; g < *conc; g++ {
		errs[g] = map[string]int{}
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for atomic.AddInt64(&issued, 1) <= maxCalls && time.Now().Before(stop) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				s := time.Now()
				_, err := c.GetMetrics(ctx, req)
				d := time.Since(s)
				cancel()
				if err != nil {
					code, _ := statusOf(err)
					errs[g][code]++
					continue
				}
				lat[g] = append(lat[g], d)
				if *pace > 0 {
					time.Sleep(*pace)
				}
			}
		}(g)
	}
	wg.Wait()
	elapsed := time.Since(t0)
	var all []time.Duration
	codesSeen := map[string]int{}
	nerr := 0
	for g := range lat {
		all = append(all, lat[g]...)
		for k, v := range errs[g] {
			codesSeen[k] += v
			nerr += v
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		i := int(p * float64(len(all)))
		if i >= len(all) {
			i = len(all) - 1
		}
		return float64(all[i].Nanoseconds()) / 1000
	}
	return map[string]interface{}{
		"c": *conc, "calls": len(all), "errors": nerr, "error_codes": codesSeen,
		"elapsed_s": elapsed.Seconds(), "calls_per_s": float64(len(all)) / elapsed.Seconds(),
		"p50_us": pct(0.50), "p99_us": pct(0.99), "max_us": pct(1.0), "metricName": mname,
	}
}

// cmdWatch (freshness): GetMetrics for the spec's name every -interval on one
// connection. Prints {"ready":true,"value":V} after the first answer, then
// {"unix_ms":..,"value":..,"calls":..} once metricValueFloat == -value (or an
// "end" line at -timeout). The caller changes the backend after "ready" and
// compares its own wall clock with unix_ms.
func cmdWatch(c pb.ExternalScalerClient) map[string]interface{} {
	r := ref()
	mname := *metric
	if mname == "" {
		spec, err := c.GetMetricSpec(context.Background(), r)
		if err != nil {
			return callErr("GetMetricSpec", err, 0)
		}
		if len(spec.MetricSpecs) > 0 {
			mname = spec.MetricSpecs[0].MetricName
		}
	}
	req := &pb.GetMetricsRequest{ScaledObjectRef: r, MetricName: mname}
	stop := time.Now().Add(*timeout)
	calls := 0
	for time.Now().Before(stop) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := c.GetMetrics(ctx, req)
		cancel()
		calls++
		if err != nil {
			return callErr("GetMetrics", err, 0)
		}
		v := 0.0
		if len(res.MetricValues) > 0 {
			v = res.MetricValues[0].MetricValueFloat
		}
		if calls == 1 {
			emit(map[string]interface{}{"ready": true, "value": v})
		}
		if v == *wantValue && calls > 1 {
			return map[string]interface{}{"unix_ms": unixMs(), "value": v, "calls": calls}
		}
		time.Sleep(*interval)
	}
	return map[string]interface{}{"end": map[string]interface{}{"reason": "timeout", "calls": calls}}
}

// cmdSoak: KEDA's load over one connection for -duration: -n ScaledObjects
// (distinct metadata: the given map plus -vary KEY = 10+i), each with a
// StreamIsActive stream kept open (re-opened 2 s after it ends, as KEDA
// does) and a polling loop (GetMetricSpec, GetMetrics, IsActive) every
// -interval. Prints a JSON line per minute and a summary at the end:
// calls, errors by code, stream messages and stream ends by code.
func cmdSoak(c pb.ExternalScalerClient) map[string]interface{} {
	n := *nStreams
	if n <= 0 {
		n = 100
	}
	var mu sync.Mutex
	calls, msgs := 0, 0
	errs := map[string]int{}
	ends := map[string]int{}
	stop := time.Now().Add(*duration)
	refFor := func(i int) *pb.ScaledObjectRef {
		md := map[string]string{}
		for k, v := range metadata {
			md[k] = v
		}
		md[*vary] = varied(md[*vary], i)
		return &pb.ScaledObjectRef{Name: fmt.Sprintf("so-%d", i), Namespace: *namespace, ScalerMetadata: md}
	}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		r := refFor(i)
		wg.Add(2)
		go func() { // the stream, re-opened as KEDA does
			defer wg.Done()
			for time.Now().Before(stop) {
				ctx, cancel := context.WithDeadline(context.Background(), stop)
				st, err := c.StreamIsActive(ctx, r)
				if err == nil {
					for {
						_, err = st.Recv()
						if err != nil {
							break
						}
						mu.Lock()
						msgs++
						mu.Unlock()
					}
				}
				cancel()
				if time.Now().Before(stop) {
					code, _ := statusOf(err)
					mu.Lock()
					ends[code]++
					mu.Unlock()
					time.Sleep(2 * time.Second)
				}
			}
		}()
		go func(i int) { // the polling loop, phase-shifted per object
			defer wg.Done()
			time.Sleep(time.Duration(i) * *interval / time.Duration(n))
			for time.Now().Before(stop) {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				spec, err := c.GetMetricSpec(ctx, r)
				if err == nil && len(spec.MetricSpecs) > 0 {
					_, err = c.GetMetrics(ctx, &pb.GetMetricsRequest{ScaledObjectRef: r, MetricName: spec.MetricSpecs[0].MetricName})
					if err == nil {
						_, err = c.IsActive(ctx, r)
					}
				}
				cancel()
				mu.Lock()
				calls++
				if err != nil {
					code, _ := statusOf(err)
					errs[code]++
				}
				mu.Unlock()
				time.Sleep(*interval)
			}
		}(i)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t0 := time.Now()
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	snap := func() map[string]interface{} {
		mu.Lock()
		defer mu.Unlock()
		e := map[string]int{}
		for k, v := range errs {
			e[k] = v
		}
		se := map[string]int{}
		for k, v := range ends {
			se[k] = v
		}
		return map[string]interface{}{"t_s": int(time.Since(t0).Seconds()), "objects": n, "poll_rounds": calls,
			"poll_errors": e, "stream_messages": msgs, "stream_ends": se}
	}
	for {
		select {
		case <-tick.C:
			emit(snap())
		case <-done:
			return snap()
		}
	}
}

func main() {
	args := os.Args[1:]
	fs.SetOutput(ioutil.Discard)
	if err := fs.Parse(args); err != nil {
		usage(err.Error())
	}
	if fs.NArg() == 0 {
		usage("missing subcommand")
	}
	sub := fs.Arg(0)
	if err := fs.Parse(fs.Args()[1:]); err != nil {
		usage(err.Error())
	}
	if fs.NArg() != 0 {
		usage("unexpected arguments: " + strings.Join(fs.Args(), " "))
	}
	if !*useTLS && (*caFile != "" || *certFile != "" || *serverName != "" || *insecure) {
		usage("-ca, -cert, -key, -server-name and -insecure need -tls")
	}
	known := map[string]bool{"poll": true, "rr": true, "spec": true, "metrics": true, "isactive": true, "stream": true,
		"streams": true, "method": true, "deadline": true, "cancel": true, "health": true,
		"health-watch": true, "big": true, "load": true, "watch": true, "soak": true, "spray": true}
	if !known[sub] {
		usage("unknown subcommand " + sub)
	}
	time.AfterFunc(*maxTime, func() { fatal("max-time", "gave up after "+maxTime.String()) })

	conn := dial()
	defer conn.Close()
	c := pb.NewExternalScalerClient(conn)
	switch sub {
	case "poll":
		finish(cmdPoll(c))
	case "spec":
		finish(cmdSpec(c))
	case "rr":
		finish(cmdRoundRobin(c))
	case "metrics":
		finish(cmdMetrics(c))
	case "isactive":
		finish(cmdIsActive(c))
	case "stream":
		cmdStream(c)
		finish(nil)
	case "streams":
		cmdStreams(c)
		finish(nil)
	case "method":
		finish(cmdMethod(conn))
	case "deadline":
		finish(cmdDeadline(c))
	case "cancel":
		finish(cmdCancel(c))
	case "health":
		finish(cmdHealth(conn))
	case "health-watch":
		cmdHealthWatch(conn)
		finish(nil)
	case "big":
		finish(cmdBig(c))
	case "load":
		finish(cmdLoad(c))
	case "watch":
		finish(cmdWatch(c))
	case "soak":
		finish(cmdSoak(c))
	case "spray":
		finish(cmdSpray(c))
	}
}
