// Command sluice-gateway is the Gateway API controller of a Sluice data
// plane: it watches a Kubernetes cluster's GatewayClasses, Gateways,
// HTTPRoutes and the Services, EndpointSlices and Secrets they name, and
// drives a sluice server through its admin API socket.
//
// It is a binary of its own, in a module of its own, so that the sluice
// server links only what the server uses: client-go and the Gateway API
// types would add tens of megabytes to it.
//
//	sluice-gateway --admin-socket /run/sluice/admin.sock [flags]
//	sluice-gateway --translate manifests.yaml   # print the config, offline
//
// Exit status: 0 after a clean shutdown (SIGINT or SIGTERM), 1 on an
// error, 2 on a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/sluice-server/sluice/gateway/controller"
	"github.com/sluice-server/sluice/gateway/translate"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// usageError is an error in the command line: exit status 2.
type usageError struct{ error }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice-gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		kubeconfig  = fs.String("kubeconfig", "", "the kubeconfig file to reach the cluster by; empty: the pod's service account, else $KUBECONFIG or ~/.kube/config")
		socket      = fs.String("admin-socket", "", "the data plane's admin API socket (required), as its config's admin.socket")
		state       = fs.String("admin-state", "", "the admin section's state file, as the data plane's first config has it (the section cannot change without a restart)")
		configDir   = fs.String("config-dir", "", "the data plane's config file directory, where TLS files are written; empty: the socket's directory")
		name        = fs.String("controller-name", "sluice-server.dev/gateway-controller", "the GatewayClass controllerName this controller serves")
		pool        = fs.String("address-pool", "10.245.0.0/24", "the CIDR the Gateways' addresses are given from, one each; the data plane must be able to bind them")
		idle        = fs.String("idle-listen", "127.0.0.1:0", "the data plane's listen address while no Gateway is programmed")
		debounce    = fs.Duration("debounce", 100*time.Millisecond, "how long to wait after a change for more before applying")
		verify      = fs.Duration("verify", 10*time.Second, "how often to check, when nothing changes, that the data plane serves the config loaded")
		elect       = fs.Bool("leader-elect", false, "run only while holding a Lease, for several replicas")
		leaseNS     = fs.String("lease-namespace", "", "the Lease's namespace; empty: the pod's ($POD_NAMESPACE), else default")
		leaseName   = fs.String("lease-name", "sluice-gateway", "the Lease's name")
		identity    = fs.String("identity", "", "this replica's name in the Lease; empty: the host name")
		translateIn = fs.String("translate", "", "translate the manifests in this file (- for stdin), print the config and exit; no cluster is reached")
	)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: sluice-gateway --admin-socket PATH [flags]\n       sluice-gateway --translate FILE [flags]\n\nThe Gateway API controller of a Sluice data plane.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			stderr = stdout
			fs.Usage()
			return 0
		}
		return 2
	}
	err := func() error {
		if fs.NArg() > 0 {
			return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
		}
		prefix, err := netip.ParsePrefix(*pool)
		if err != nil {
			return usageError{fmt.Errorf("--address-pool: want a CIDR such as 10.245.0.0/24: %v", err)}
		}
		opts := translate.Options{ControllerName: *name, AddressPool: prefix, AdminSocket: *socket, AdminState: *state, IdleListen: *idle}
		if *translateIn != "" {
			return translateFile(*translateIn, opts, stdout)
		}
		if *socket == "" {
			return usageError{errors.New("--admin-socket is required: the path of the data plane's admin API socket")}
		}
		rc, err := restConfig(*kubeconfig)
		if err != nil {
			return err
		}
		kube, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return err
		}
		gw, err := gatewayclient.NewForConfig(rc)
		if err != nil {
			return err
		}
		c, err := controller.New(controller.Config{Kube: kube, Gateway: gw, AdminSocket: *socket, ConfigDir: *configDir, Options: opts, Debounce: *debounce, Verify: *verify})
		if err != nil {
			return err
		}
		if !*elect {
			return c.Run(ctx)
		}
		e := controller.Election{Namespace: *leaseNS, Name: *leaseName, Identity: *identity}
		if e.Namespace == "" {
			e.Namespace = cmpOr(os.Getenv("POD_NAMESPACE"), "default")
		}
		if e.Identity == "" {
			if e.Identity, err = os.Hostname(); err != nil {
				return err
			}
		}
		return c.RunElected(ctx, e)
	}()
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "sluice-gateway:", err)
		fmt.Fprintln(stderr, "run sluice-gateway --help for the flags")
		return 2
	default:
		slog.Error("sluice-gateway: " + err.Error())
		return 1
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// restConfig is the cluster's client config: the kubeconfig file, else
// the pod's service account, else the default kubeconfig rules.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if rc, err := rest.InClusterConfig(); err == nil {
		return rc, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
}

// translateFile prints the config the manifests in file translate to.
func translateFile(file string, opts translate.Options, stdout io.Writer) error {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return err
	}
	snap, err := translate.Decode(data)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if opts.ControllerName == "" {
		return usageError{errors.New("--controller-name is empty")}
	}
	res := translate.Translate(snap, opts)
	_, err = stdout.Write(res.Config)
	return err
}
