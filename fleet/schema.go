package fleet

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrations embed.FS

// The group roles toolgate fleet init creates (NOLOGIN): a login role is
// made a member of one of them (AddRole).
const (
	RoleAgent    = "toolgate_agent"
	RoleApprover = "toolgate_approver"
	RoleAuditor  = "toolgate_auditor"
)

// Kinds of login role, for AddRole.
var roleOfKind = map[string]string{"host": RoleAgent, "approver": RoleApprover, "auditor": RoleAuditor}

// InitResult is what Init did.
type InitResult struct {
	SchemaVersion int      `json:"schema_version"` // the fleet schema's version now
	Applied       []int    `json:"applied"`        // migrations applied by this call
	RolesCreated  []string `json:"roles_created"`
}

// Init creates the group roles (when missing) and applies the embedded
// migrations that the database lacks, each in its own transaction, under
// an advisory lock so that two inits do not race. Run it as the
// database's owner (a role that may create schemas and roles).
func Init(ctx context.Context, dsn string) (InitResult, error) {
	res := InitResult{Applied: []int{}, RolesCreated: []string{}}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return res, &UnavailableError{Err: err}
	}
	defer conn.Close(ctx)
	for _, role := range []string{RoleAgent, RoleApprover, RoleAuditor} {
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", role).Scan(&exists); err != nil {
			return res, fmt.Errorf("look up role %s: %w", role, err)
		}
		if exists {
			continue
		}
		if _, err := conn.Exec(ctx, "CREATE ROLE "+pgx.Identifier{role}.Sanitize()+" NOLOGIN"); err != nil && !isDuplicate(err) {
			return res, fmt.Errorf("create role %s: %w", role, err)
		}
		res.RolesCreated = append(res.RolesCreated, role)
	}
	files, err := migrationFiles()
	if err != nil {
		return res, err
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(7466051)`); err != nil {
		return res, err
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(7466051)`)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS public.toolgate_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return res, fmt.Errorf("migrations table: %w", err)
	}
	for _, m := range files {
		var done bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM public.toolgate_migrations WHERE version = $1)", m.version).Scan(&done); err != nil {
			return res, err
		}
		if !done {
			if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, m.sql); err != nil {
					return fmt.Errorf("migration %s: %w", m.name, err)
				}
				_, err := tx.Exec(ctx, "INSERT INTO public.toolgate_migrations (version) VALUES ($1)", m.version)
				return err
			}); err != nil {
				return res, err
			}
			res.Applied = append(res.Applied, m.version)
		}
		res.SchemaVersion = m.version
	}
	return res, nil
}

type migration struct {
	version int
	name    string
	sql     string
}

func migrationFiles() ([]migration, error) {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []migration
	for _, n := range names {
		base := strings.TrimPrefix(n, "migrations/")
		v, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("migration %s: its name must start with its version", n)
		}
		sql, err := migrations.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{v, base, string(sql)})
	}
	return out, nil
}

// AddRole creates a login role of a kind (host, approver or auditor) with
// a password, as a member of that kind's group role. A host's role name is
// its name in the fleet.
func AddRole(ctx context.Context, dsn, name, kind, password string) error {
	group, ok := roleOfKind[kind]
	if !ok {
		return fmt.Errorf("a role's kind is host, approver or auditor, not %q", kind)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return &UnavailableError{Err: err}
	}
	defer conn.Close(ctx)
	var stmt string
	if err := conn.QueryRow(ctx, "SELECT format('CREATE ROLE %I LOGIN PASSWORD %L IN ROLE %I', $1::text, $2::text, $3::text)",
		name, password, group).Scan(&stmt); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("create role %s: %w", name, err)
	}
	return nil
}
