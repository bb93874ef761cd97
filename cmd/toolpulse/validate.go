package main

import "fmt"

type validateCmd struct{}

// Run loads the config and compiles every rule without touching the
// network; a bad config exits 78 with every positioned error on stderr.
func (v *validateCmd) Run(e *env, root *cli) error {
	cfg, err := root.loadConfig(e)
	if err != nil {
		return err
	}
	fixtures := 0
	for _, c := range cfg.Consumers {
		fixtures += len(c.Fixtures)
	}
	fmt.Fprintf(e.stdout, "%s: ok (%d probes, %d consumers, %d fixtures)\n",
		root.configPath(e), len(cfg.Probes), len(cfg.Consumers), fixtures)
	return nil
}
