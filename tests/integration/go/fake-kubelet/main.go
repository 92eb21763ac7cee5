// fake-kubelet serves the kubelet's pod-resources API
// (v1.PodResourcesLister/List) on a unix socket, as the kubelet does at
// /var/lib/kubelet/pod-resources/kubelet.sock, answering from a JSON state
// file that is re-read on every call, so a test steers it by rewriting the
// file:
//
//	fake-kubelet -socket PATH -state FILE
//
//	{"pods": [{"namespace": "ml", "name": "vllm-0", "containers": [{"name": "main",
//	   "devices": [{"resource_name": "nvidia.com/gpu", "device_ids": ["GPU-..."]}],
//	   "cpu_ids": [2, 3],
//	   "dynamic_resources": [{"claim_name": "gpus", "claim_namespace": "ml",
//	     "claim_resources": [{"driver_name": "gpu.nvidia.com", "pool_name": "node-a",
//	       "device_name": "gpu-0", "share_id": "", "cdi_devices": ["k8s.gpu.nvidia.com/claim=..."]}]}]}]}],
//	 "fail": "UNAVAILABLE",   (optional: answer with this gRPC code instead)
//	 "delay_ms": 0}           (optional: sleep before answering, ignoring the deadline)
//
// dynamic_resources is what a kubelet with DRA sends in ContainerResources
// field 5 (DynamicResource: claim_name 2, claim_namespace 3, claim_resources
// 4; ClaimResource: cdi_devices 1, driver_name 2, pool_name 3, device_name
// 4, share_id 5). An unreadable or invalid state file is answered with INTERNAL. A stale
// socket file at PATH is replaced, as the kubelet does when it restarts.
// SIGTERM/SIGINT: stop and remove the socket; SIGKILL leaves it behind,
// like a crashed kubelet. Prints "listening PATH" on stdout once serving.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/ioutil"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "kgs/podresources"
)

type stateDevice struct {
	ResourceName string   `json:"resource_name"`
	DeviceIDs    []string `json:"device_ids"`
}

type stateClaimResource struct {
	DriverName string   `json:"driver_name"`
	PoolName   string   `json:"pool_name"`
	DeviceName string   `json:"device_name"`
	ShareID    string   `json:"share_id"`
	CDIDevices []string `json:"cdi_devices"`
}

type stateDynamicResource struct {
	ClaimName      string               `json:"claim_name"`
	ClaimNamespace string               `json:"claim_namespace"`
	ClaimResources []stateClaimResource `json:"claim_resources"`
}

type stateContainer struct {
	Name             string                 `json:"name"`
	Devices          []stateDevice          `json:"devices"`
	CPUIDs           []int64                `json:"cpu_ids"`
	DynamicResources []stateDynamicResource `json:"dynamic_resources"`
}

type statePod struct {
	Namespace  string           `json:"namespace"`
	Name       string           `json:"name"`
	Containers []stateContainer `json:"containers"`
}

type state struct {
	Pods    []statePod `json:"pods"`
	Fail    string     `json:"fail"`
	DelayMS int64      `json:"delay_ms"`
}

type server struct {
	pb.UnimplementedPodResourcesListerServer
	statePath string
}

func (s *server) List(_ context.Context, _ *pb.ListPodResourcesRequest) (*pb.ListPodResourcesResponse, error) {
	raw, err := ioutil.ReadFile(s.statePath)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "fake kubelet: read state: %v", err)
	}
	var st state
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, status.Errorf(codes.Internal, "fake kubelet: state %s: %v", s.statePath, err)
	}
	if st.DelayMS > 0 {
		// Like a hung kubelet: the caller's deadline is not honoured here,
		// so only the client's own deadline can end the call.
		time.Sleep(time.Duration(st.DelayMS) * time.Millisecond)
	}
	if st.Fail != "" {
		var c codes.Code
		if err := c.UnmarshalJSON([]byte(`"` + st.Fail + `"`)); err != nil {
			return nil, status.Errorf(codes.Internal, "fake kubelet: fail %q: %v", st.Fail, err)
		}
		return nil, status.Errorf(c, "fake kubelet: failing with %s as told", st.Fail)
	}
	resp := &pb.ListPodResourcesResponse{}
	for _, p := range st.Pods {
		pr := &pb.PodResources{Name: p.Name, Namespace: p.Namespace}
		for _, c := range p.Containers {
			cr := &pb.ContainerResources{Name: c.Name, CpuIds: c.CPUIDs}
			for _, d := range c.Devices {
				cr.Devices = append(cr.Devices, &pb.ContainerDevices{
					ResourceName: d.ResourceName,
					DeviceIds:    d.DeviceIDs,
					Topology:     &pb.TopologyInfo{Nodes: []*pb.NUMANode{{ID: 0}}},
				})
			}
			for _, d := range c.DynamicResources {
				dr := &pb.DynamicResource{ClaimName: d.ClaimName, ClaimNamespace: d.ClaimNamespace}
				for _, r := range d.ClaimResources {
					res := &pb.ClaimResource{DriverName: r.DriverName, PoolName: r.PoolName,
						DeviceName: r.DeviceName, ShareId: r.ShareID}
					for _, n := range r.CDIDevices {
						res.CdiDevices = append(res.CdiDevices, &pb.CDIDevice{Name: n})
					}
					dr.ClaimResources = append(dr.ClaimResources, res)
				}
				cr.DynamicResources = append(cr.DynamicResources, dr)
			}
			pr.Containers = append(pr.Containers, cr)
		}
		resp.PodResources = append(resp.PodResources, pr)
	}
	return resp, nil
}

func main() {
	socket := flag.String("socket", "", "unix socket path to serve on")
	statePath := flag.String("state", "", "JSON state file, re-read on every call")
	flag.Parse()
	if *socket == "" || *statePath == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: fake-kubelet -socket PATH -state FILE")
		os.Exit(2)
	}
	// The kubelet removes a leftover socket at start-up and creates a new one.
	if err := os.Remove(*socket); err != nil && !os.IsNotExist(err) {
		log.Fatalf("fake-kubelet: remove %s: %v", *socket, err)
	}
	lis, err := net.Listen("unix", *socket)
	if err != nil {
		log.Fatalf("fake-kubelet: listen %s: %v", *socket, err)
	}
	s := grpc.NewServer()
	pb.RegisterPodResourcesListerServer(s, &server{statePath: *statePath})

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		s.Stop() // closes the listener, which removes the socket file
		os.Remove(*socket)
	}()
	fmt.Printf("listening %s\n", *socket)
	os.Stdout.Sync()
	if err := s.Serve(lis); err != nil && err != grpc.ErrServerStopped {
		log.Fatalf("fake-kubelet: serve: %v", err)
	}
}
