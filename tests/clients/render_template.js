// Reference prompts from transformers.js's Jinja engine (@huggingface/jinja) running a model's own chat
// template, for the parity test of text/chat_template (tests/text/chat_template_parity_test.cpp).
// usage: node render_template.js TOKENIZER_CONFIG_JSON CONVERSATIONS_JSON OUT_JSON
//   CONVERSATIONS_JSON: [{messages, tools?, add_generation_prompt, enable_thinking?}]; OUT_JSON: [string].
const fs = require("fs");
const { Template } = require("@huggingface/jinja");

const [configPath, conversationsPath, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error("usage: node render_template.js TOKENIZER_CONFIG_JSON CONVERSATIONS_JSON OUT_JSON");
  process.exit(2);
}
const config = JSON.parse(fs.readFileSync(configPath, "utf8"));
const token = (t) => (t && typeof t === "object" ? t.content : t ?? "");
const template = new Template(config.chat_template);
const out = [];
for (const c of JSON.parse(fs.readFileSync(conversationsPath, "utf8"))) {
  const context = {
    messages: c.messages,
    add_generation_prompt: c.add_generation_prompt,
    bos_token: token(config.bos_token),
    eos_token: token(config.eos_token),
  };
  if (c.tools) context.tools = c.tools;
  if (c.enable_thinking !== undefined) context.enable_thinking = c.enable_thinking;
  out.push(template.render(context));
}
fs.writeFileSync(outPath, JSON.stringify(out));
