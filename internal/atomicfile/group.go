package atomicfile

// Group is a set of outputs that appear together (the shards of a split
// GGUF): every destination is checked before any is written, each file is
// written to its own temporary, and Commit renames them only once all are
// written. An interrupted or failed run leaves none of them; a crash during
// the renames themselves can leave part of the set, which a reader of the
// set then refuses as incomplete.
type Group struct {
	force  bool
	inputs []string
	files  []*File
}

// NewGroup checks every destination in names (CheckDest) and returns a
// Group to create them through.
func NewGroup(names []string, force bool, inputs ...string) (*Group, error) {
	for _, name := range names {
		if err := CheckDest(name, force, inputs...); err != nil {
			return nil, err
		}
	}
	return &Group{force: force, inputs: inputs}, nil
}

// Create starts the output path, as Create does.
func (g *Group) Create(path string) (*File, error) {
	f, err := Create(path, g.force, g.inputs...)
	if err != nil {
		return nil, err
	}
	g.files = append(g.files, f)
	return f, nil
}

// Commit commits every file, in the order created.
func (g *Group) Commit() error {
	for _, f := range g.files {
		if err := f.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// Abort removes every temporary not yet committed; `defer g.Abort()` is the
// usual pattern.
func (g *Group) Abort() {
	for _, f := range g.files {
		f.Abort()
	}
}
