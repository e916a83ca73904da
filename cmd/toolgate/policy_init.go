package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/examples"
	"github.com/urfave/cli/v2"
)

func policyInitCommand() *cli.Command {
	return &cli.Command{
		Name:  "init",
		Usage: "write a starter policy (where toolgate run looks for one by default)",
		Description: `Writes one of the example policies, with its inline tests, to the default policy
file ($XDG_CONFIG_HOME/toolgate/policy.json, or TOOLGATE_POLICY), or to --output:

   laptop  a person is around (examples/policies/developer-laptop.json): secrets
           and destructive commands are denied, reads and edits in the project
           and safe commands allowed, git push and GitHub asked, anything else asked
   ci      nobody is (examples/policies/unattended-ci.json): the same denials,
           a few build commands allowed, anything else denied

An existing file is left alone unless --force. Quiet on success: edit the file,
then check it with toolgate policy check.

EXAMPLES
   toolgate policy init
   toolgate policy init --profile ci --output .toolgate/policy.json
   toolgate policy init --force && toolgate policy check ~/.config/toolgate/policy.json

EXIT STATUS
   0    written
   64   bad command line (an unknown --profile)
   73   the file exists (use --force to replace it), or cannot be written`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "profile", Value: "laptop", Usage: "laptop (a person approves asks) or ci (unattended: unknown calls are denied)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the policy to `FILE`", EnvVars: []string{policyEnv},
				Value: defaultPolicy(), DefaultText: "$XDG_CONFIG_HOME/toolgate/policy.json"},
			&cli.BoolFlag{Name: "force", Usage: "replace an existing file"},
		},
		Action: func(cliCtx *cli.Context) error {
			if cliCtx.Args().Present() {
				return usagef("policy init takes no arguments (the file is --output FILE)")
			}
			return runPolicyInit(cliCtx.String("profile"), cliCtx.String("output"), cliCtx.Bool("force"))
		},
	}
}

func runPolicyInit(profile, out string, force bool) error {
	name, ok := examples.Profiles[profile]
	if !ok {
		var names []string
		for p := range examples.Profiles {
			names = append(names, p)
		}
		sort.Strings(names)
		return usagef("--profile must be one of %s, not %q", strings.Join(names, ", "), profile)
	}
	if out == "" { // TOOLGATE_POLICY set but empty
		out = defaultPolicy()
	}
	doc, err := examples.Policies.ReadFile(name)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(out); err == nil && !force {
		return &cantCreateError{fmt.Errorf("a policy already exists at %s; it was left alone\nTry: toolgate policy check %s, or toolgate policy init --force to replace it", out, out)}
	}
	if err := writePrivate(out, doc); err != nil {
		return &cantCreateError{fmt.Errorf("write the policy: %w\nTry: --output FILE in a directory you can write", err)}
	}
	return nil
}

// writePrivate writes a file 0600 (its directory 0700 when it makes it),
// replacing it whole.
func writePrivate(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// missingPolicy says where the policy was looked for and how to get one.
func missingPolicy(path string, named bool, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read the policy %s: %w\nTry: check its permissions, or name another with --policy FILE", path, err)
	}
	if named {
		return fmt.Errorf("no policy at %s: %w\nTry: check the path, or write a starter policy there: toolgate policy init --output %s", path, fs.ErrNotExist, path)
	}
	return fmt.Errorf("no policy at %s, where toolgate looks by default ($XDG_CONFIG_HOME/toolgate/policy.json; --policy FILE or %s name another): %w\n"+
		"Try: toolgate policy init              a starter policy for a laptop: a person approves what it asks\n"+
		"     toolgate policy init --profile ci  for unattended runs: anything it does not allow is denied", path, policyEnv, fs.ErrNotExist)
}
