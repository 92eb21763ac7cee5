// baseline-server: an externalscaler.ExternalScaler + grpc.health.v1 server
// on grpc-go 1.33 (the stack of the Go system, pmady/keda-gpu-scaler), that
// answers from values cached in memory (no NVML). It is the benchmark
// baseline and the reference the test clients are checked against.
//
//	baseline-server -listen 127.0.0.1:PORT [-gpu-util 10,20,30,40]
//	                [-tls-cert F -tls-key F [-tls-client-ca F]]
//
// Metadata it understands (a small subset of the C server's):
// targetValue (default 50, must be > 0), aggregation sum|max|avg (default
// sum), activationThreshold (default 0; active when value > it),
// pollIntervalSeconds (StreamIsActive period, default 1, must be > 0).
// StreamMetricSpec is left to grpc-go's default (UNIMPLEMENTED).
// SIGTERM/SIGINT: every open stream ends with OK, then a graceful stop.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io/ioutil"
	"log"
	"math"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	pb "kgs/externalscaler"
)

type server struct {
	pb.UnimplementedExternalScalerServer
	utils    []float64
	shutdown chan struct{}
}

type params struct {
	target, activation float64
	agg                string
	period             time.Duration
}

func parse(md map[string]string) (params, error) {
	p := params{target: 50, agg: "sum", period: time.Second}
	num := func(k string, dst *float64) error {
		if s, ok := md[k]; ok {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return status.Errorf(codes.InvalidArgument, "%s: not a number: %q", k, s)
			}
			*dst = v
		}
		return nil
	}
	if err := num("targetValue", &p.target); err != nil {
		return p, err
	}
	if p.target <= 0 {
		return p, status.Errorf(codes.InvalidArgument, "targetValue must be > 0")
	}
	if err := num("activationThreshold", &p.activation); err != nil {
		return p, err
	}
	var secs float64 = 1
	if err := num("pollIntervalSeconds", &secs); err != nil {
		return p, err
	}
	if secs <= 0 {
		return p, status.Errorf(codes.InvalidArgument, "pollIntervalSeconds must be > 0")
	}
	p.period = time.Duration(secs * float64(time.Second))
	if a, ok := md["aggregation"]; ok {
		if a != "sum" && a != "max" && a != "avg" {
			return p, status.Errorf(codes.InvalidArgument, "aggregation: want sum, max or avg, got %q", a)
		}
		p.agg = a
	}
	return p, nil
}

func (s *server) value(p params) float64 {
	var v float64
	for _, u := range s.utils {
		switch p.agg {
		case "max":
			v = math.Max(v, u)
		default:
			v += u
		}
	}
	if p.agg == "avg" && len(s.utils) > 0 {
		v /= float64(len(s.utils))
	}
	return v
}

func metricName(md map[string]string) string {
	t := md["metricType"]
	if t == "" {
		t = "gpu_utilization"
	}
	return "gpu-" + strings.ReplaceAll(t, "_", "-")
}

func (s *server) GetMetricSpec(ctx context.Context, r *pb.ScaledObjectRef) (*pb.GetMetricSpecResponse, error) {
	p, err := parse(r.ScalerMetadata)
	if err != nil {
		return nil, err
	}
	return &pb.GetMetricSpecResponse{MetricSpecs: []*pb.MetricSpec{{
		MetricName: metricName(r.ScalerMetadata), TargetSize: int64(math.Max(1, math.Ceil(p.target))), TargetSizeFloat: p.target}}}, nil
}

func (s *server) GetMetrics(ctx context.Context, r *pb.GetMetricsRequest) (*pb.GetMetricsResponse, error) {
	ref := r.GetScaledObjectRef()
	p, err := parse(ref.GetScalerMetadata())
	if err != nil {
		return nil, err
	}
	v := s.value(p)
	return &pb.GetMetricsResponse{MetricValues: []*pb.MetricValue{{
		MetricName: r.MetricName, MetricValue: int64(math.Round(v)), MetricValueFloat: v}}}, nil
}

func (s *server) IsActive(ctx context.Context, r *pb.ScaledObjectRef) (*pb.IsActiveResponse, error) {
	p, err := parse(r.ScalerMetadata)
	if err != nil {
		return nil, err
	}
	return &pb.IsActiveResponse{Result: s.value(p) > p.activation}, nil
}

func (s *server) StreamIsActive(r *pb.ScaledObjectRef, st pb.ExternalScaler_StreamIsActiveServer) error {
	p, err := parse(r.ScalerMetadata)
	if err != nil {
		return err
	}
	t := time.NewTicker(p.period)
	defer t.Stop()
	for {
		if err := st.Send(&pb.IsActiveResponse{Result: s.value(p) > p.activation}); err != nil {
			return err
		}
		select {
		case <-t.C:
		case <-s.shutdown:
			return nil // ends with OK: KEDA then reconnects after 2 s, not up to 60 s
		case <-st.Context().Done():
			return status.FromContextError(st.Context().Err()).Err()
		}
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:6000", "host:port")
	utilList := flag.String("gpu-util", "10,20,30,40", "cached per-GPU utilisation values")
	certF := flag.String("tls-cert", "", "PEM server certificate")
	keyF := flag.String("tls-key", "", "PEM server key")
	caF := flag.String("tls-client-ca", "", "PEM CA: require and verify client certificates")
	flag.Parse()

	s := &server{shutdown: make(chan struct{})}
	for _, f := range strings.Split(*utilList, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			log.Fatalf("-gpu-util: %v", err)
		}
		s.utils = append(s.utils, v)
	}

	var opts []grpc.ServerOption
	if *certF != "" || *keyF != "" {
		cert, err := tls.LoadX509KeyPair(*certF, *keyF)
		if err != nil {
			log.Fatalf("tls: %v", err)
		}
		cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		if *caF != "" {
			pem, err := ioutil.ReadFile(*caF)
			if err != nil {
				log.Fatalf("tls: %v", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				log.Fatalf("tls: no certificate in %s", *caF)
			}
			cfg.ClientCAs = pool
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg)))
	} else if *caF != "" {
		log.Fatal("-tls-client-ca needs -tls-cert and -tls-key")
	}

	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	g := grpc.NewServer(opts...)
	pb.RegisterExternalScalerServer(g, s)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("externalscaler.ExternalScaler", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(g, hs)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	stopped := make(chan struct{})
	go func() {
		<-sig
		defer close(stopped)
		hs.Shutdown() // Watchers see NOT_SERVING
		close(s.shutdown)
		done := make(chan struct{})
		go func() { g.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-time.After(4 * time.Second):
			g.Stop()
		}
	}()
	fmt.Fprintf(os.Stderr, "baseline-server: listening on %s\n", lis.Addr())
	if err := g.Serve(lis); err != nil {
		log.Fatal(err)
	}
	<-stopped // Serve returns at once; let the streams' OK trailers go out
}
