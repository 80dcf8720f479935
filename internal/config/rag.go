package config

// Normalized is the config with the old form migrated to a store named
// default.
func (r RagConfig) Normalized() RagConfig {
	if r.DBPath != "" && len(r.Stores) == 0 {
		r.Stores = []RagStoreEntry{{Name: "default", DBPath: r.DBPath, EmbeddingModel: r.EmbeddingModel}}
		if r.Active == "" {
			r.Active = "default"
		}
	}
	r.DBPath, r.EmbeddingModel = "", ""
	return r
}

// Store finds a store by name ("" is the active one).
func (r RagConfig) Store(name string) (RagStoreEntry, bool) {
	r = r.Normalized()
	if name == "" {
		name = r.Active
	}
	for _, s := range r.Stores {
		if s.Name == name {
			return s, true
		}
	}
	return RagStoreEntry{}, false
}

// EmbeddingModelFor is the model a store embeds with for a generation model.
func (s RagStoreEntry) EmbeddingModelFor(genModel string) string {
	if s.EmbeddingModel != "" {
		return s.EmbeddingModel
	}
	if m := s.ModelMap[genModel]; m != "" {
		return m
	}
	return DefaultEmbeddingModel
}

// DefaultEmbeddingModel is the suggested embedding model.
const DefaultEmbeddingModel = "nomic-embed-text"
