package upstream

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsSettings(t *testing.T) {
	o := Options{Upstreams: []string{"unix:/a"}, Retries: -1, Queue: 7}
	s, err := o.Settings("x")
	if err != nil {
		t.Fatal(err)
	}
	if s.Retries != 0 || s.Config.Queue != 7 || s.ConnectTimeout != DefaultConnectTimeout ||
		s.Config.MaxIdleConns != DefaultMaxIdleConns || s.Health.Rise != DefaultHealthRise ||
		s.Passive.Window != DefaultPassiveWindow || s.Balancer.Policy() != RoundRobin {
		t.Errorf("defaults: %+v", s)
	}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{}, "x: no upstreams"},
		{Options{Upstreams: make([]string, 65)}, "x: more than 64 upstreams"},
		{Options{Upstreams: []string{"a"}, Policy: "fastest"}, `x: policy "fastest"`},
		{Options{Upstreams: []string{"a"}, Health: Health{Path: "healthz"}}, `x: health path "healthz"`},
		{Options{Upstreams: []string{"a"}, Health: Health{Path: "/a b"}}, `x: health path "/a b"`},
		{Options{Upstreams: []string{"a"}, Health: Health{Path: "/", Expect: 42}}, "x: health expect 42"},
		{Options{Upstreams: []string{"a"}, Name: "a\nb"}, `x: name "a\nb" has a control character`},
		{Options{Upstreams: []string{"http://a"}, Resolver: "10.0.0.2"}, "x: resolver, dns_min_interval and dns_max_interval apply to upstreams from DNS"},
		{Options{Upstreams: []string{"dns+http://a:1"}, Resolver: "10.0.0.2:x"}, `x: resolver "10.0.0.2:x": want an address`},
		{Options{Upstreams: []string{"dns+http://a:1"}, DNSMinInterval: time.Minute, DNSMaxInterval: time.Second}, "x: dns_min_interval 1m0s is more than dns_max_interval 1s"},
		{Options{Upstreams: []string{"dns+http://a:1"}, DNSMinInterval: -1}, "x: dns_min_interval and dns_max_interval: want a duration"},
	} {
		if _, err := tc.o.Settings("x"); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q…", tc.o, err, tc.want)
		}
	}
	if OrDefault(-time.Second, time.Minute) != 0 || OrDefault(0, 3) != 3 || OrDefault(int64(5), 3) != 5 {
		t.Error("OrDefault")
	}
}
