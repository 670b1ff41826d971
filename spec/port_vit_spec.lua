-- A port test: lucidrains/vit-pytorch's ViT (vit_pytorch/vit.py), ported line
-- by line with wick.einops for its einops lines (Rearrange, rearrange,
-- repeat), loading the initial weights PyTorch saved and checking the logits,
-- every gradient and 5 Adam steps against PyTorch's (spec/fixtures/vit_pytorch.py
-- made them).
--
-- Where this port differs from vit.py (besides Lua syntax):
--  * keyword constructor arguments come in one table: ViT{image_size = 8, ...};
--  * `repeat` is a Lua keyword: einops.repeat_;
--  * dims are 1-based: chunk(3, {dim = -1}) is unchanged, x[:, 0] is x[{{}, 1}],
--    x.mean(dim = 1) is x:mean(2);
--  * self.pos_embedding[:, :(n + 1)] clamps in Python; wick's ranges do not,
--    so the end is min(n + 1, its size);
--  * PyTorch's 0-based child names (layers.0.0.to_qkv) come in through
--    nn.utils.from_pytorch_names; class indices are 1-based.
local wick = require("wick")
local nn = wick.nn
local einops = wick.einops
local rearrange, repeat_, Rearrange = einops.rearrange, einops.repeat_, einops.layers.torch.Rearrange

local function pair(t) return type(t) == "table" and t or { t, t } end

local FeedForward = nn.Module:extend("FeedForward")
function FeedForward:init(dim, hidden_dim, dropout)
  dropout = dropout or 0
  self.net = nn.Sequential(
    nn.LayerNorm(dim),
    nn.Linear(dim, hidden_dim),
    nn.GELU(),
    nn.Dropout(dropout),
    nn.Linear(hidden_dim, dim),
    nn.Dropout(dropout)
  )
end
function FeedForward:forward(x) return self.net(x) end

local Attention = nn.Module:extend("Attention")
function Attention:init(dim, o)
  local heads, dim_head, dropout = o.heads or 8, o.dim_head or 64, o.dropout or 0
  local inner_dim = dim_head * heads
  local project_out = not (heads == 1 and dim_head == dim)
  self.heads = heads
  self.scale = dim_head ^ -0.5
  self.norm = nn.LayerNorm(dim)
  self.attend = nn.Softmax({ dim = -1 })
  self.dropout = nn.Dropout(dropout)
  self.to_qkv = nn.Linear(dim, inner_dim * 3, { bias = false })
  self.to_out = project_out and nn.Sequential(nn.Linear(inner_dim, dim), nn.Dropout(dropout)) or nn.Identity()
end
function Attention:forward(x)
  x = self.norm(x)
  local qkv = self.to_qkv(x):chunk(3, { dim = -1 })
  local q, k, v = rearrange(qkv[1], "b n (h d) -> b h n d", { h = self.heads }),
    rearrange(qkv[2], "b n (h d) -> b h n d", { h = self.heads }),
    rearrange(qkv[3], "b n (h d) -> b h n d", { h = self.heads })
  local dots = wick.matmul(q, k:transpose(-1, -2)) * self.scale
  local attn = self.attend(dots)
  attn = self.dropout(attn)
  local out = wick.matmul(attn, v)
  out = rearrange(out, "b h n d -> b n (h d)")
  return self.to_out(out)
end

local Transformer = nn.Module:extend("Transformer")
function Transformer:init(dim, depth, heads, dim_head, mlp_dim, dropout)
  dropout = dropout or 0
  self.norm = nn.LayerNorm(dim)
  self.layers = nn.ModuleList({})
  for _ = 1, depth do
    self.layers:append(nn.ModuleList({
      Attention(dim, { heads = heads, dim_head = dim_head, dropout = dropout }),
      FeedForward(dim, mlp_dim, dropout),
    }))
  end
end
function Transformer:forward(x)
  for _, layer in ipairs(self.layers) do
    local attn, ff = layer[1], layer[2]
    x = attn(x) + x
    x = ff(x) + x
  end
  return self.norm(x)
end

local ViT = nn.Module:extend("ViT")
function ViT:init(o)
  local is, ps = pair(o.image_size), pair(o.patch_size)
  local image_height, image_width = is[1], is[2]
  local patch_height, patch_width = ps[1], ps[2]
  assert(image_height % patch_height == 0 and image_width % patch_width == 0,
    "Image dimensions must be divisible by the patch size.")
  local channels, pool = o.channels or 3, o.pool or "cls"
  local num_patches = math.floor(image_height / patch_height) * math.floor(image_width / patch_width)
  local patch_dim = channels * patch_height * patch_width
  assert(pool == "cls" or pool == "mean", "pool type must be either cls (cls token) or mean (mean pooling)")
  local num_cls_tokens = pool == "cls" and 1 or 0
  self.to_patch_embedding = nn.Sequential(
    Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", { p1 = patch_height, p2 = patch_width }),
    nn.LayerNorm(patch_dim),
    nn.Linear(patch_dim, o.dim),
    nn.LayerNorm(o.dim)
  )
  self.cls_token = nn.Parameter(wick.randn(1, num_cls_tokens, o.dim))
  self.pos_embedding = nn.Parameter(wick.randn(1, num_patches + num_cls_tokens, o.dim))
  self.dropout = nn.Dropout(o.emb_dropout or 0)
  self.transformer = Transformer(o.dim, o.depth, o.heads, o.dim_head or 64, o.mlp_dim, o.dropout or 0)
  self.pool = pool
  self.to_latent = nn.Identity()
  self.mlp_head = nn.Linear(o.dim, o.num_classes)
end
function ViT:forward(img)
  local x = self.to_patch_embedding(img)
  local b, n = x.shape[1], x.shape[2]
  local cls_tokens = repeat_(self.cls_token, "1 ... d -> b ... d", { b = b })
  x = wick.cat({ cls_tokens, x }, { dim = 2 })
  x = x + self.pos_embedding[{ {}, { 1, math.min(n + 1, self.pos_embedding.shape[2]) } }]
  x = self.dropout(x)
  x = self.transformer(x)
  x = self.pool == "mean" and x:mean(2) or x[{ {}, 1 }]
  x = self.to_latent(x)
  return self.mlp_head(x)
end

describe("port: vit-pytorch's ViT with wick.einops", function()
  it("loads PyTorch's weights and gives its logits, gradients and 5 Adam steps", function()
    local model = ViT({ image_size = 8, patch_size = 4, num_classes = 5, dim = 16, depth = 2, heads = 2, mlp_dim = 32,
      dim_head = 8 })
    local result = model:load_state_dict(nn.utils.from_pytorch_names(wick.load("spec/fixtures/vit_pytorch_sd.pt")),
      { strict = true })
    assert.are.same({}, result.missing_keys)
    local e = wick.load("spec/fixtures/vit_pytorch_expected.pt")
    local img, labels = e.img, e.labels + 1
    local opt = wick.optim.Adam(model:parameters(), { lr = 1e-3 })
    local crit = nn.CrossEntropyLoss()
    local losses = {}
    for step = 1, 5 do
      local logits = model(img)
      local loss = crit(logits, labels)
      opt:zero_grad()
      loss:backward()
      if step == 1 then
        assert.is_true((logits - e.logits):abs():max():item() < 1e-5)
        local checked = 0
        for name, p in model:named_parameters() do
          local torch_name = next(nn.utils.to_pytorch_names({ [name] = p }))
          local g = e["grad." .. torch_name]
          assert.is_truthy(g, torch_name)
          assert.is_true((p.grad - g):abs():max():item() < 1e-5, name)
          checked = checked + 1
        end
        local torch_count = 0
        for key in pairs(e) do if key:sub(1, 5) == "grad." then torch_count = torch_count + 1 end end
        assert.are.equal(torch_count, checked) -- every parameter, and no other
        assert.is_true(checked > 20)
      end
      opt:step()
      losses[step] = loss:item()
    end
    for i = 1, 5 do assert.is_true(math.abs(losses[i] - e.losses[i]:item()) < 1e-5) end
    assert.is_true(losses[5] < losses[1])
  end)
end)
