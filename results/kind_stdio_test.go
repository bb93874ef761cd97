package results

import "testing"

// TestStdioServer: a stdio server is named by its command, an argument
// that would not read back as one word quoted.
func TestStdioServer(t *testing.T) {
	for _, tt := range []struct {
		argv []string
		want string
	}{
		{[]string{"npx", "-y", "@modelcontextprotocol/server-memory@2026.8.31"}, "stdio: npx -y @modelcontextprotocol/server-memory@2026.8.31"},
		{[]string{"node", "/opt/my servers/index.js", ""}, `stdio: node "/opt/my servers/index.js" ""`},
		{[]string{"python3", "-c", `print("hi")`}, `stdio: python3 -c "print(\"hi\")"`},
	} {
		if got := StdioServer(tt.argv); got != tt.want {
			t.Errorf("StdioServer(%q) = %s, want %s", tt.argv, got, tt.want)
		}
	}
}
