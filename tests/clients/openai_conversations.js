// Conversations against `dualpath serve` through the official `openai` SDK (tests/serve/openai_sdk_test.cpp):
// N agents at once, each a conversation of T turns, streaming with usage. Each turn sends the whole history
// back, as agents do. Prints one JSON object: per conversation, per turn, the answer and its usage.
// usage: node openai_conversations.js BASE_URL MODEL CONVERSATIONS TURNS MAX_TOKENS
const { OpenAI } = require("openai");

async function conversation(client, model, index, turns, maxTokens) {
  const messages = [{ role: "system", content: `You are coding agent ${index}. Work in the repository.` }];
  const out = [];
  for (let t = 0; t < turns; t++) {
    messages.push({ role: "user", content: `Turn ${t}: run the tests of module ${index}.${t} and report what failed.` });
    const stream = await client.chat.completions.create({
      model,
      messages,
      max_tokens: maxTokens,
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = "";
    let usage = null;
    let finish = null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        if (c.delta && c.delta.content) content += c.delta.content;
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    out.push({ content, finish, usage });
    messages.push({ role: "assistant", content });
  }
  return out;
}

async function main() {
  const [baseURL, model, n, turns, maxTokens] = process.argv.slice(2);
  if (!maxTokens) {
    console.error("usage: node openai_conversations.js BASE_URL MODEL CONVERSATIONS TURNS MAX_TOKENS");
    process.exit(2);
  }
  // Bounded: every request times out, and 429s are retried a few times by the SDK.
  const client = new OpenAI({ baseURL, apiKey: "unused-on-loopback", timeout: 120000, maxRetries: 5 });
  const all = await Promise.all(
    Array.from({ length: Number(n) }, (_, i) => conversation(client, model, i, Number(turns), Number(maxTokens))),
  );
  console.log(JSON.stringify({ conversations: all }));
}

main().catch((e) => {
  console.error(`openai_conversations: ${e.message}`);
  process.exit(1);
});
