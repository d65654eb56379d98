package config

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// A Folder's YAML loads as the server it describes: absolute paths, TLS
// when a certificate is given, workers only when some, no Server field
// for an empty ServerHeader.
func TestFolderYAML(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	os.Mkdir("www", 0o755)
	f := &Folder{Root: "www", Listen: "127.0.0.1:8080", Browse: true, Compress: true,
		ServerHeader: "", Workers: "0", PidFile: "run/sluice.pid", Comment: "flags"}
	data, err := f.YAML()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := new(Loader).Parse("(command line)", data)
	if err != nil {
		t.Fatalf("Parse:\n%s\n%v", data, err)
	}
	defer cfg.Close()
	if len(cfg.Listen) != 1 || cfg.Listen[0].Addr != "127.0.0.1:8080" || cfg.ListenOptions[cfg.Listen[0]] != nil {
		t.Errorf("listen %v, options %v", cfg.Listen, cfg.ListenOptions)
	}
	if cfg.Workers != 0 || cfg.ServerHeader != "" || cfg.PidFile != filepath.Join(dir, "run/sluice.pid") {
		t.Errorf("workers %d, server header %q, pid file %q", cfg.Workers, cfg.ServerHeader, cfg.PidFile)
	}
	if len(cfg.Routes) != 1 {
		t.Fatalf("%d routes, want 1", len(cfg.Routes))
	}
	want := fmt.Sprintf("# flags\nlisten: 127.0.0.1:8080\nserver_header: false\npid_file: %s\nroutes:\n  - match: /\n    pipeline:\n      - files:\n          root: %s\n          browse: true\n      - compress\n",
		filepath.Join(dir, "run/sluice.pid"), filepath.Join(dir, "www"))
	if string(data) != want {
		t.Errorf("YAML:\n%s\nwant:\n%s", data, want)
	}

	sluicetest.NewCA(t).IssueFiles(t, dir, "a.example")
	f = &Folder{Root: "www", Listen: ":8443", TLSCert: "a.example.crt", TLSKey: "a.example.key", ServerHeader: "sluice", Workers: "auto"}
	if data, err = f.YAML(); err != nil {
		t.Fatal(err)
	}
	cfg2, err := new(Loader).Parse("(command line)", data)
	if err != nil {
		t.Fatalf("Parse:\n%s\n%v", data, err)
	}
	defer cfg2.Close()
	o := cfg2.ListenOptions[cfg2.Listen[0]]
	if o == nil || o.TLS == nil || len(o.TLS.Certificates) != 1 || o.TLS.Certificates[0].CertFile != filepath.Join(dir, "a.example.crt") {
		t.Errorf("TLS listener: %+v", o)
	}
	if cfg2.Workers != WorkersAuto || cfg2.ServerHeader != "sluice" {
		t.Errorf("workers %d, server header %q", cfg2.Workers, cfg2.ServerHeader)
	}

	if _, err := (&Folder{Root: "www", Listen: ":8080", Workers: "-1"}).YAML(); err == nil {
		t.Errorf("Workers -1: no error")
	}
}

func TestParseWorkers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"0", 0, true}, {"4", 4, true}, {"auto", WorkersAuto, true}, {"1024", 1024, true},
		{"1025", 0, false}, {"-1", 0, false}, {"+4", 0, false}, {"04", 0, false}, {"x", 0, false}, {"", 0, false},
	} {
		got, err := ParseWorkers(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseWorkers(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// The config file 'sluice serve --root /srv/www --listen :8080
// --compress' stands for.
func ExampleFolder() {
	f := &Folder{Root: "/srv/www", Listen: ":8080", Compress: true, ServerHeader: "sluice", Workers: "0",
		Comment: "sluice serve --root /srv/www --listen :8080 --compress"}
	data, err := f.YAML()
	if err != nil {
		panic(err)
	}
	fmt.Print(string(data))
	// Output:
	// # sluice serve --root /srv/www --listen :8080 --compress
	// listen: :8080
	// server_header: sluice
	// routes:
	//   - match: /
	//     pipeline:
	//       - files: /srv/www
	//       - compress
}
