package secrets

import (
	"strings"
	"testing"
)

// The secret formats of the issue, each redacted; ordinary code is not.
func TestSecretFormats(t *testing.T) {
	secrets := []struct{ name, line, value string }{
		{"aws key id", "id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"},
		{"aws secret", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
		{"aws secret quoted", `"aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",`, "wJalrXUtnFEMI/K7MDENG"},
		{"jwt", "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "dozjgNryP4J3jVmNHl0w5N"},
		{"stripe", "stripe.key = sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"},
		{"slack webhook", "url: https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", "XXXXXXXXXXXXXXXXXXXXXXXX"},
		{"npm", "//registry.npmjs.org/:_authToken=npm_" + strings.Repeat("a1B2", 9), "npm_a1B2"},
		{"huggingface", "HF=hf_" + strings.Repeat("x7Yz", 9), "hf_x7Yz"},
		{"azure", "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=" + strings.Repeat("Ab1+", 22) + "==;EndpointSuffix=core", "Ab1+Ab1+"},
		{"url token", "git clone https://ghtokenabcdefghijklmnop1234@github.com/o/r", "ghtokenabcdefghijklmnop1234"},
		{"url password", "postgres://app:s3cr3tpass@db:5432/x", "s3cr3tpass"},
		{"password yaml", `password: "correct-horse-battery"`, "correct-horse-battery"},
		{"password env", "DB_PASSWORD=correcthorsebattery", "correcthorsebattery"},
		{"github", "token ghp_" + strings.Repeat("Z", 36), "ghp_ZZZZ"},
		{"openai", "OPENAI_API_KEY=sk-proj-" + strings.Repeat("q", 30), "sk-proj-qqq"},
		// Formats gitleaks' rules caught that the first short list missed.
		{"twilio", "twilio = SK0123456789abcdef0123456789abcdef", "SK0123456789abcdef"},
		{"sendgrid", "sendgrid: 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", "TwL2iGABf9DHoTf"},
		{"pypi", "pypi-AgEIcHlwaS5vcmcCJGE4ZjZiNzE3LWI1ZjctNGY1ZC1hY2ZlLTZjYmEzOTk2OTUwNAACJXsicGVybWlzc2lvbnMiOiAidXNlciIsICJ2ZXJzaW9uIjogMX0AAAYg", "CJGE4ZjZiNzE3"},
		{"shopify", "x shpat_0123456789abcdef0123456789abcdef y", "shpat_0123"},
	}
	for _, s := range secrets {
		t.Run(s.name, func(t *testing.T) {
			if out := Redact(s.line + "\n"); strings.Contains(out, s.value) || !strings.Contains(out, "[REDACTED") {
				t.Fatalf("not redacted: %q", out)
			}
		})
	}
	for _, code := range []string{"token = lexer.next()", "apiKey := os.Getenv(\"API_KEY\")", "func (k *Key) String() string {", "password := req.FormValue(\"password\")", "if passwordHash == nil {"} {
		if out := Redact(code); out != code {
			t.Errorf("ordinary code changed: %q → %q", code, out)
		}
	}
	denied := []string{"prod.env", "docker/app.env", ".vault-token", "kubeconfig", "kubeconfig-prod.yaml", ".boto", ".terraformrc",
		"auth.json", ".m2/settings.xml", "home/.config/gh/hosts.yml", "deploy_key", "deploy_key.pub", "gcp-key.json", ".dockerconfigjson",
		".git/config.worktree", ".git/modules/sub/config", ".env", ".pgpass", "secrets.yaml", ".htpasswd"}
	for _, p := range denied {
		if !FileDenied(p) {
			t.Errorf("%s is not denied", p)
		}
	}
	for _, p := range []string{".env.example", "main.go", "config/app.yaml", "docs/environment.md", "settings.xml", "keys.go"} {
		if FileDenied(p) {
			t.Errorf("%s is denied", p)
		}
	}
}
