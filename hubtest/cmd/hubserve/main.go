// Command hubserve runs the test Hub (package hubtest) on loopback for
// measurements: it prints the endpoint (for HF_ENDPOINT) and each served
// file's sha256 once computed, and serves until interrupted.
//
//	hubserve -shape kimi-k2 -layers 2 -sides testdata/arch/deepseek3/hf
//
// serves org/kimi-k2: Kimi K2's first 2 layers in its shard layout.
// -deepseek-rope gives a Kimi-shaped config DeepSeek-V3's YaRN ramp
// (beta_fast 32), which tfconv converts (Kimi K2's beta_fast 1 it refuses).
// -hash computes every file's sha256 before serving (else on first use).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"

	"github.com/tfconv/tfconv/hubtest"
)

func main() {
	shape := flag.String("shape", "kimi-k2", "kimi-k2, deepseek-v3 or qwen2-bf16")
	layers := flag.Int("layers", 1, "decoder layers served")
	sides := flag.String("sides", "", "folder of side files (tokenizer) to serve beside the weights")
	rope := flag.Bool("deepseek-rope", false, "give a kimi-k2 config DeepSeek-V3's rope_scaling")
	hash := flag.Bool("hash", false, "hash every file before serving")
	flag.Parse()
	side := map[string][]byte{}
	if *sides != "" {
		for _, n := range []string{"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json", "vocab.json", "merges.txt"} {
			if b, err := os.ReadFile(filepath.Join(*sides, n)); err == nil {
				side[n] = b
			}
		}
	}
	var repo *hubtest.Repo
	var err error
	switch *shape {
	case "kimi-k2", "deepseek-v3":
		m := hubtest.KimiK2()
		if *shape == "deepseek-v3" {
			m = hubtest.DeepSeekV3()
		} else if *rope {
			m.Config["rope_scaling"] = hubtest.DeepSeekV3().Config["rope_scaling"]
		}
		m.Config["vocab_size"] = m.Vocab
		repo, err = m.Repo("org/"+*shape, *layers, side)
	case "qwen2-bf16":
		repo, err = hubtest.Qwen2BF16("org/"+*shape, *layers, 1000, side)
	default:
		err = fmt.Errorf("unknown shape %q", *shape)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hubserve:", err)
		os.Exit(1)
	}
	var names []string
	var total int64
	for n, f := range repo.Files {
		names = append(names, n)
		total += f.Size()
	}
	sort.Strings(names)
	if *hash {
		for _, n := range names {
			fmt.Fprintf(os.Stderr, "%s %d %s\n", repo.Files[n].SHA256(), repo.Files[n].Size(), n)
		}
	}
	s := hubtest.Start(repo)
	fmt.Printf("%s %s %d files %d bytes commit %s\n", s.URL, repo.ID, len(names), total, repo.Commit)
	for _, n := range names {
		fmt.Printf("%s/%s/resolve/%s/%s %d\n", s.URL, repo.ID, repo.Commit, n, repo.Files[n].Size())
	}
	os.Stdout.Sync()
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt)
	<-c
	s.Close()
}
