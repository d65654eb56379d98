package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
)

// cluster starts the control plane processes in order, each after the one
// it depends on answers.
type cluster struct {
	o                             options
	dir, bin, share, etcd         string
	sup                           *supervisor
	pki                           *pki
	apiserverURL, adminKubeconfig string
	etcdURL                       string
	client                        kubernetes.Interface
}

func (c *cluster) start(ctx context.Context) error {
	var err error
	if c.pki, err = newPKI(c.dir, []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1"), net.ParseIP(nodeIP)}); err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	if err := c.startEtcd(ctx); err != nil {
		return err
	}
	if err := c.startAPIServer(ctx); err != nil {
		return err
	}
	if err := c.startControllers(); err != nil {
		return err
	}
	if err := c.startKwok(); err != nil {
		return err
	}
	if err := c.installGatewayAPI(ctx); err != nil {
		return err
	}
	return c.waitSchedulable(ctx)
}

// poll calls f until it returns true or an error, or ctx ends; what names
// the wait in the error, and p, when not nil, is a process whose early exit
// ends the wait.
func poll(ctx context.Context, what string, p *proc, f func() (bool, error)) error {
	var last error
	for {
		ok, err := f()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		var died <-chan struct{}
		if p != nil {
			died = p.done
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("waiting for %s: %v", what, ctx.Err())
			if last != nil {
				msg += fmt.Sprintf(" (last error: %v)", last)
			}
			if p != nil {
				msg += "\n" + p.tail(20)
			}
			return fmt.Errorf("%s", msg)
		case <-died:
			return fmt.Errorf("%s exited while waiting for %s: %v\n%s", p.name, what, p.err, p.tail(20))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *cluster) startEtcd(ctx context.Context) error {
	client, err := freePort()
	if err != nil {
		return err
	}
	peer, err := freePort()
	if err != nil {
		return err
	}
	clientURL := "http://127.0.0.1:" + strconv.Itoa(client)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
	p, err := c.sup.start("etcd", c.etcd,
		"--name=kubecluster",
		"--data-dir="+filepath.Join(c.dir, "etcd"),
		"--listen-client-urls="+clientURL,
		"--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=kubecluster="+peerURL,
		"--listen-metrics-urls=",
	)
	if err != nil {
		return err
	}
	c.etcdURL = clientURL
	return poll(ctx, "etcd", p, func() (bool, error) {
		resp, err := http.Get(clientURL + "/health")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

func (c *cluster) startAPIServer(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	c.apiserverURL = "https://127.0.0.1:" + strconv.Itoa(port)
	p, err := c.sup.start("kube-apiserver", filepath.Join(c.bin, "kube-apiserver"),
		"--etcd-servers="+c.etcdURL,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--advertise-address="+nodeIP,
		"--cert-dir="+filepath.Join(c.dir, "apiserver"),
		"--tls-cert-file="+c.pki.servingCert,
		"--tls-private-key-file="+c.pki.servingKey,
		"--client-ca-file="+c.pki.caCert,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+c.pki.saPub,
		"--service-account-signing-key-file="+c.pki.saKey,
		"--service-cluster-ip-range="+serviceCIDR,
		"--authorization-mode=RBAC",
		"--endpoint-reconciler-type=none",
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		// It taints a new node not-ready until the node lifecycle
		// controller, which this cluster does not run, clears the taint.
		"--disable-admission-plugins=TaintNodesByCondition",
		// Watch streams (sendInitialEvents) need an etcd that answers
		// progress requests (3.5 and later). With Debian's 3.4 the API
		// server took them and ended each at once with an error, and
		// kwok's informers, which ask for them, then saw pods change only
		// at a relist after a back-off growing to tens of seconds: pods
		// took that long to get an address, become Ready or go. Without
		// the feature the request is refused at once, and clients list
		// and watch the classic way.
		"--feature-gates=WatchList=false",
	)
	if err != nil {
		return err
	}
	if err := c.writeKubeconfig(); err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(c.pki.adminCert, c.pki.adminKey)
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(c.pki.caCert)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}},
	}}
	defer hc.CloseIdleConnections()
	return poll(ctx, "kube-apiserver /readyz", p, func() (bool, error) {
		resp, err := hc.Get(c.apiserverURL + "/readyz")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// writeKubeconfig writes the admin kubeconfig to the path the user gave and
// builds the client kubecluster itself uses.
func (c *cluster) writeKubeconfig() error {
	caPEM, err := os.ReadFile(c.pki.caCert)
	if err != nil {
		return err
	}
	certPEM, err := os.ReadFile(c.pki.adminCert)
	if err != nil {
		return err
	}
	keyPEM, err := os.ReadFile(c.pki.adminKey)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubecluster"] = &clientcmdapi.Cluster{Server: c.apiserverURL, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["kubecluster"] = &clientcmdapi.Context{Cluster: "kubecluster", AuthInfo: "admin"}
	cfg.CurrentContext = "kubecluster"
	if err := clientcmd.WriteToFile(*cfg, c.o.kubeconfig); err != nil {
		return err
	}
	// The processes kubecluster starts read a copy inside the work dir, so
	// the user's file may be moved or removed without harm.
	c.adminKubeconfig = filepath.Join(c.dir, "admin.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, c.adminKubeconfig); err != nil {
		return err
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		return err
	}
	c.client, err = kubernetes.NewForConfig(rc)
	return err
}

func (c *cluster) startControllers() error {
	kcmPort, err := freePort()
	if err != nil {
		return err
	}
	if _, err := c.sup.start("kube-controller-manager", filepath.Join(c.bin, "kube-controller-manager"),
		"--kubeconfig="+c.adminKubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(kcmPort),
		"--controllers="+strings.Join([]string{
			"deployment-controller", "replicaset-controller",
			"endpoints-controller", "endpointslice-controller", "endpointslice-mirroring-controller",
			"namespace-controller", "serviceaccount-controller", "serviceaccount-token-controller",
			"garbage-collector-controller", "root-ca-certificate-publisher-controller",
		}, ","),
		"--service-account-private-key-file="+c.pki.saKey,
		"--root-ca-file="+c.pki.caCert,
		"--use-service-account-credentials=false",
		"--cluster-cidr="+podCIDR,
		"--service-cluster-ip-range="+serviceCIDR,
	); err != nil {
		return err
	}
	schedPort, err := freePort()
	if err != nil {
		return err
	}
	_, err = c.sup.start("kube-scheduler", filepath.Join(c.bin, "kube-scheduler"),
		"--kubeconfig="+c.adminKubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(schedPort),
	)
	return err
}

func (c *cluster) startKwok() error {
	port, err := freePort()
	if err != nil {
		return err
	}
	args := []string{
		"--kubeconfig=" + c.adminKubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--node-ip=" + nodeIP,
		"--cidr=" + podCIDR,
		"--server-address=127.0.0.1:" + strconv.Itoa(port),
	}
	stages, err := filepath.Glob(filepath.Join(c.share, "kwok", "*.yaml"))
	if err != nil || len(stages) == 0 {
		return fmt.Errorf("no kwok stages in %s: run tools/kube/build.sh", filepath.Join(c.share, "kwok"))
	}
	sort.Strings(stages)
	for _, s := range stages {
		args = append(args, "--config="+s)
	}
	if _, err := c.sup.start("kwok", filepath.Join(c.bin, "kwok"), args...); err != nil {
		return err
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        nodeName,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{
				"kubernetes.io/hostname": nodeName, "kubernetes.io/os": "linux",
				"kubernetes.io/arch": "amd64", "type": "kwok",
			},
		},
		Spec: corev1.NodeSpec{PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}},
	}
	_, err = c.client.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{})
	return err
}

// installGatewayAPI applies the Gateway API CRDs of the chosen channel and
// waits until they are established and served.
func (c *cluster) installGatewayAPI(ctx context.Context) error {
	crdDir := filepath.Join(c.share, "gateway-api", c.o.channel)
	kubectl := filepath.Join(c.bin, "kubectl")
	out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig="+c.adminKubeconfig,
		"apply", "--server-side", "-f", crdDir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl apply -f %s: %v\n%s", crdDir, err, out)
	}
	out, err = exec.CommandContext(ctx, kubectl, "--kubeconfig="+c.adminKubeconfig,
		"wait", "--for=condition=Established", "--timeout=60s", "crd", "--all").CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl wait for the Gateway API CRDs: %v\n%s", err, out)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", c.adminKubeconfig)
	if err != nil {
		return err
	}
	gw, err := gatewayclient.NewForConfig(rc)
	if err != nil {
		return err
	}
	return poll(ctx, "the Gateway API to be served", nil, func() (bool, error) {
		_, err := gw.GatewayV1().GatewayClasses().List(ctx, metav1.ListOptions{})
		return err == nil, err
	})
}

// waitSchedulable waits for what a Deployment in the default namespace
// needs: the kwok node Ready and the default service account.
func (c *cluster) waitSchedulable(ctx context.Context) error {
	if err := poll(ctx, "node "+nodeName+" to be Ready", nil, func() (bool, error) {
		n, err := c.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		return err
	}
	return poll(ctx, "the default service account", nil, func() (bool, error) {
		_, err := c.client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
}
