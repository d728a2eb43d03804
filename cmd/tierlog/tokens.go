package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierlog/tierlog/pkg/auth"
	tlclient "github.com/tierlog/tierlog/pkg/client"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/local"
	tlserver "github.com/tierlog/tierlog/pkg/server"
)

func newTokensCmd() *cobra.Command {
	return groupCmd("tokens", "Create, list and revoke access tokens",
		`Manage the access tokens of a server with token auth on (docs/auth.md).

Through a running server (--url, with an admin token in --token or
TIERLOG_TOKEN), or with --data-dir straight in a stopped local server's
data directory: that is how the first admin token is made.`,
		newTokensCreateCmd(), newTokensListCmd(), newTokensRevokeCmd())
}

// adminScope is the scope of an admin token: every topic and group, every
// operation.
func adminScope() meta.TokenScope {
	all, allGroups := "", ""
	ops := make([]string, len(auth.Grantable))
	for i, op := range auth.Grantable {
		ops[i] = string(op)
	}
	return meta.TokenScope{Topics: &meta.NameSet{Prefix: &all}, Groups: &meta.NameSet{Prefix: &allGroups}, Operations: ops}
}

// parseNameSet reads --topics or --groups: "*" (every name), prefix:P,
// exact:NAME or names:A,B.
func parseNameSet(flag, s string) (*meta.NameSet, error) {
	if s == "*" {
		all := ""
		return &meta.NameSet{Prefix: &all}, nil
	}
	kind, v, ok := strings.Cut(s, ":")
	switch {
	case ok && kind == "prefix":
		return &meta.NameSet{Prefix: &v}, nil
	case ok && kind == "exact" && v != "":
		return &meta.NameSet{Exact: &v}, nil
	case ok && kind == "names" && v != "":
		return &meta.NameSet{Names: strings.Split(v, ",")}, nil
	}
	return nil, usagef("--%s %q: want *, prefix:P, exact:NAME or names:A,B", flag, s)
}

// parseExpiry reads --expires: a duration from now (720h), unix ms, or
// RFC 3339.
func parseExpiry(s string, now time.Time) (int64, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return 0, usagef("--expires %s: want a positive duration", s)
		}
		return now.Add(d).UnixMilli(), nil
	}
	ms, err := parseTimestamp(s)
	if err != nil {
		return 0, usagef("--expires: %v, or a duration from now such as 720h", err)
	}
	return ms, nil
}

// openTokenStore opens a stopped local server's metadata for token
// commands with --data-dir.
func openTokenStore(dataDir string) (*local.Store, error) {
	st, err := local.Open(tlserver.MetaDir(dataDir))
	if errors.Is(err, local.ErrLocked) {
		return nil, fmt.Errorf("%w: a server is running on --data-dir %s: manage tokens through it (--url, --token) instead", err, dataDir)
	}
	return st, err
}

// toClientToken is a stored token as the API shows it.
func toClientToken(t meta.Token, secret string) tlclient.Token {
	out := tlclient.Token{ID: t.ID, Secret: secret, Description: t.Description, CreatedAt: t.CreatedMs}
	if t.ExpiresMs != 0 {
		e := t.ExpiresMs
		out.ExpiresAt = &e
	}
	b, _ := json.Marshal(t.Scope) // the same JSON as the API's scope
	_ = json.Unmarshal(b, &out.Scope)
	return out
}

func newTokensCreateCmd() *cobra.Command {
	var (
		cf                   clientFlags
		dataDir, format      string
		topics, groups, desc string
		expires              string
		operations           []string
		admin                bool
	)
	c := &cobra.Command{
		Use:   "create",
		Short: "Make an access token and print it (its secret is shown only now)",
		Long: `Make an access token scoped to topics, groups and operations, and print it:
plain output is the token alone on stdout, to capture in a variable; the
secret is never shown again (the server keeps only its hash).

--topics and --groups take *, prefix:P, exact:NAME or names:A,B (absent:
none). --operations lists produce, consume, groups and admin. --admin is
every topic, every group and every operation: the first token, which makes
the others. --expires takes a duration from now (720h), unix milliseconds
or RFC 3339.`,
		Example: `  tierlog tokens create --data-dir ./.tierlog --admin     # the first token, server stopped
  export TIERLOG_TOKEN=tl_...
  tierlog tokens create --topics prefix:orders --operations produce --description "orders producer"
  tierlog tokens create --topics exact:orders --groups exact:billing --operations consume,groups --expires 720h`,
		Args: checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outputFormat(format); err != nil {
				return err
			}
			var scope meta.TokenScope
			if admin {
				if topics != "" || groups != "" || len(operations) > 0 {
					return usagef("--admin is every topic, group and operation: drop --topics, --groups and --operations")
				}
				scope = adminScope()
			} else {
				var err error
				if topics != "" {
					if scope.Topics, err = parseNameSet("topics", topics); err != nil {
						return err
					}
				}
				if groups != "" {
					if scope.Groups, err = parseNameSet("groups", groups); err != nil {
						return err
					}
				}
				scope.Operations = operations
				if err := auth.ValidateScope(scope); err != nil {
					return usagef("%v (--operations, or --admin)", err)
				}
			}
			var exp int64
			if expires != "" {
				var err error
				if exp, err = parseExpiry(expires, time.Now()); err != nil {
					return err
				}
			}
			ctx, cancel := requestContext(cmd.Context())
			defer cancel()
			var t tlclient.Token
			if dataDir != "" {
				st, err := openTokenStore(dataDir)
				if err != nil {
					return err
				}
				defer closeQuietly(st)
				if exp != 0 && exp <= time.Now().UnixMilli() {
					return usagef("--expires %s is not in the future", expires)
				}
				mt, secret, err := auth.New(st).Create(ctx, desc, exp, scope)
				if err != nil {
					return err
				}
				t = toClientToken(mt, secret)
			} else {
				cl, err := cf.newClient()
				if err != nil {
					return err
				}
				var cs tlclient.TokenScope
				b, _ := json.Marshal(scope)
				_ = json.Unmarshal(b, &cs)
				if t, err = cl.CreateToken(ctx, tlclient.TokenSpec{Description: desc, ExpiresAt: exp, Scope: cs}); err != nil {
					return err
				}
			}
			if format == "json" {
				return printJSON(cmd.OutOrStdout(), t)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "made token %s; its secret is shown only now\n", t.ID)
			_, err := fmt.Fprintln(cmd.OutOrStdout(), t.Secret)
			return err
		},
	}
	addClientFlags(c, &cf, 0) // sent once: a retry could make a second token
	f := c.Flags()
	f.StringVar(&dataDir, "data-dir", "", "make it in this stopped local server's data directory instead of through --url")
	f.BoolVar(&admin, "admin", false, "every topic, group and operation")
	f.StringVar(&topics, "topics", "", "topics: *, prefix:P, exact:NAME or names:A,B")
	f.StringVar(&groups, "groups", "", "groups: *, prefix:P, exact:NAME or names:A,B")
	f.StringSliceVar(&operations, "operations", nil, "operations: produce, consume, groups, admin (comma separated)")
	f.StringVar(&expires, "expires", "", "expiry: a duration from now (720h), unix ms or RFC 3339; default never")
	f.StringVar(&desc, "description", "", "what the token is for")
	f.StringVar(&format, "format", "plain", "output format: plain (the token alone) or json")
	return c
}

func newTokensListCmd() *cobra.Command {
	var (
		cf              clientFlags
		dataDir, format string
	)
	c := &cobra.Command{
		Use:   "list",
		Short: "List the access tokens (never their secrets)",
		Args:  checkArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outputFormat(format); err != nil {
				return err
			}
			ctx, cancel := requestContext(cmd.Context())
			defer cancel()
			var list []tlclient.Token
			if dataDir != "" {
				st, err := openTokenStore(dataDir)
				if err != nil {
					return err
				}
				defer closeQuietly(st)
				ts, err := st.Tokens(ctx)
				if err != nil {
					return err
				}
				for _, t := range ts {
					list = append(list, toClientToken(t, ""))
				}
			} else {
				cl, err := cf.newClient()
				if err != nil {
					return err
				}
				if list, err = cl.Tokens(ctx); err != nil {
					return err
				}
			}
			return printTokens(cmd.OutOrStdout(), format, list)
		},
	}
	addClientFlags(c, &cf, retried)
	c.Flags().StringVar(&dataDir, "data-dir", "", "read this stopped local server's data directory instead of --url")
	c.Flags().StringVar(&format, "format", "plain", "output format: plain or json")
	return c
}

func newTokensRevokeCmd() *cobra.Command {
	var (
		cf      clientFlags
		dataDir string
	)
	c := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an access token: every server refuses it within 2 s",
		Args:  checkArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := requestContext(cmd.Context())
			defer cancel()
			if dataDir != "" {
				st, err := openTokenStore(dataDir)
				if err != nil {
					return err
				}
				defer closeQuietly(st)
				return auth.New(st).Revoke(ctx, args[0])
			}
			cl, err := cf.newClient()
			if err != nil {
				return err
			}
			return cl.RevokeToken(ctx, args[0])
		},
	}
	addClientFlags(c, &cf, 0)
	c.Flags().StringVar(&dataDir, "data-dir", "", "revoke in this stopped local server's data directory instead of through --url")
	return c
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func printTokens(w io.Writer, format string, list []tlclient.Token) error {
	if format == "json" {
		if list == nil {
			list = []tlclient.Token{}
		}
		return printJSON(w, struct {
			Tokens []tlclient.Token `json:"tokens"`
		}{list})
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tOPERATIONS\tTOPICS\tGROUPS\tEXPIRES\tDESCRIPTION")
	for _, t := range list {
		exp := "never"
		if t.ExpiresAt != nil {
			exp = time.UnixMilli(*t.ExpiresAt).UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, strings.Join(t.Scope.Operations, ","),
			showNameSet(t.Scope.Topics), showNameSet(t.Scope.Groups), exp, t.Description)
	}
	return tw.Flush()
}

// showNameSet is a name set as --topics and --groups take it.
func showNameSet(n *tlclient.NameSet) string {
	switch {
	case n == nil:
		return "-"
	case n.Prefix != nil && *n.Prefix == "":
		return "*"
	case n.Prefix != nil:
		return "prefix:" + *n.Prefix
	case n.Exact != nil:
		return "exact:" + *n.Exact
	}
	return "names:" + strings.Join(n.Names, ",")
}
