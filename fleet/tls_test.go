package fleet

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/pgtest"
)

// The DSN speaks TLS as libpq users expect: a host logs in with a client
// certificate (no password), an approver with a password over
// sslmode=verify-full, and a server whose certificate the CA did not sign
// is refused.
func TestTLSAndClientCertificates(t *testing.T) {
	srv := pgtest.StartTLS(t, "tls_host")
	f := &fixture{t: t, srv: srv, db: srv.NewDatabase(ctx)}
	if _, err := Init(ctx, srv.SuperDSN(f.db)); err != nil {
		t.Fatal(err)
	}
	if err := AddRole(ctx, srv.SuperDSN(f.db), "tls_host", "host", pgtest.Password()); err != nil {
		t.Fatal(err)
	}
	cert, key := srv.TLS.Issue("tls_host", false)
	tlsDSN := func(user, password, extra string) string {
		u := url.URL{Scheme: "postgres", Host: fmt.Sprintf("127.0.0.1:%d", srv.Port), Path: "/" + f.db,
			RawQuery: "sslmode=verify-full&sslrootcert=" + url.QueryEscape(srv.TLS.CA) + extra}
		u.User = url.User(user)
		if password != "" {
			u.User = url.UserPassword(user, password)
		}
		return u.String()
	}
	hostDSN := tlsDSN("tls_host", "", "&sslcert="+url.QueryEscape(cert)+"&sslkey="+url.QueryEscape(key))
	plain := f.role("alice", "approver")
	u, _ := url.Parse(plain)
	pw, _ := u.User.Password()
	aliceDSN := tlsDSN("alice", pw, "")

	watch := listen(t, srv.SuperDSN(f.db), "toolgate_published")
	h := newHost(t, hostDSN, "")
	a := h.ask(t, "toolu_1", "git push", time.Hour)
	published(t, watch, "tls_host", h.l)
	ap, err := Dial(ctx, aliceDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer ap.Close()
	if _, err := ap.Decide(ctx, a.ID, true, ""); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, h, a.ID)

	// Without its certificate the host's role cannot log in at all.
	var un *UnavailableError
	if _, err := Dial(ctx, tlsDSN("tls_host", "", "")); !errors.As(err, &un) {
		t.Errorf("the host's role without a certificate: %v", err)
	}
	// A CA that did not sign the server's certificate: refused.
	other := pgtest.StartTLS(t)
	wrongCA := strings.Replace(aliceDSN, url.QueryEscape(srv.TLS.CA), url.QueryEscape(other.TLS.CA), 1)
	if _, err := Dial(ctx, wrongCA); !errors.As(err, &un) || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("verify-full against another CA: %v", err)
	}
}
