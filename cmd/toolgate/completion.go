package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// The bash and zsh scripts ask toolgate itself what may come next
// (urfave's --generate-bash-completion), so they always match the binary;
// fish gets the whole tree at once.

const bashCompletion = `# toolgate completion for bash: eval "$(toolgate completion bash)"
_toolgate_complete() {
  local cur="${COMP_WORDS[COMP_CWORD]}"
  local words=("${COMP_WORDS[@]:0:COMP_CWORD}")
  if [[ "$cur" == -* ]]; then words+=("$cur"); fi
  local IFS=$'\n'
  COMPREPLY=($(compgen -W "$("${words[@]}" --generate-bash-completion 2>/dev/null)" -- "$cur"))
}
complete -o bashdefault -o default -F _toolgate_complete toolgate
`

const zshCompletion = `#compdef toolgate
# toolgate completion for zsh: eval "$(toolgate completion zsh)", or save it
# as _toolgate in a directory of your $fpath.
_toolgate() {
  local -a opts
  local cur=${words[-1]}
  if [[ "$cur" == -* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
compdef _toolgate toolgate
`

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script for bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: `Prints a script that completes toolgate's commands and flags in your shell.

EXAMPLES
   eval "$(toolgate completion bash)"          # in ~/.bashrc
   eval "$(toolgate completion zsh)"           # in ~/.zshrc (after compinit)
   toolgate completion fish > ~/.config/fish/completions/toolgate.fish

EXIT STATUS
   0    printed
   64   no shell, or one toolgate has no script for`,
		Action: func(cliCtx *cli.Context) error {
			if cliCtx.NArg() != 1 {
				return usagef("completion takes one shell: bash, zsh or fish")
			}
			w := cliCtx.App.Writer
			switch shell := cliCtx.Args().First(); shell {
			case "bash":
				_, err := fmt.Fprint(w, bashCompletion)
				return err
			case "zsh":
				_, err := fmt.Fprint(w, zshCompletion)
				return err
			case "fish":
				script, err := cliCtx.App.ToFishCompletion()
				if err != nil {
					return err
				}
				_, err = fmt.Fprint(w, script)
				return err
			default:
				return usagef("completion knows bash, zsh and fish, not %q", shell)
			}
		},
	}
}
