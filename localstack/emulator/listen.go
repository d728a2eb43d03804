package emulator

import (
	"context"
	"fmt"
	"net"
)

// CheckListenAddr returns an error unless addr ("host:port") binds only
// loopback interfaces: 127.0.0.0/8, ::1, or a name such as localhost that
// resolves to loopback addresses only. An empty host (":4566") means every
// interface and is refused. allowRemote skips the check. The emulator has
// no authentication: anyone who can reach it can read and write
// everything.
func CheckListenAddr(ctx context.Context, addr string, allowRemote bool) error {
	if allowRemote {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "" {
		return fmt.Errorf("listen address %q binds every interface; use 127.0.0.1:PORT, or pass --allow-remote", addr)
	}
	if ip := net.ParseIP(host); ip != nil {
		if !ip.IsLoopback() {
			return fmt.Errorf("listen address %q is not loopback; pass --allow-remote to bind it", addr)
		}
		return nil
	}
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	for _, ip := range ips {
		if !ip.IP.IsLoopback() {
			return fmt.Errorf("listen address %q resolves to %s, which is not loopback; pass --allow-remote to bind it", addr, ip.IP)
		}
	}
	return nil
}
