#pragma once
// Models from files: a Hugging Face config.json, mapped field by field for each supported
// model_type (never guessing the MLP type from the FFN ratio), or one model object in the
// project's own format (docs/models.md).
#include <filesystem>
#include <string>

#include "zerosearch/core/model.hpp"

namespace zerosearch {

/// The model_type values parse_hf_config maps, comma-separated: "gpt2, gpt_neox, ...".
[[nodiscard]] std::string supported_model_types();

/// Maps a Hugging Face config.json to a ModelSpec named `name`. `origin` names the file in
/// messages. The sequence length is rope_scaling.original_max_position_embeddings when the
/// config has it, else max_position_embeddings (n_positions for gpt2). Throws InputError naming
/// the file, the field and its value on a missing, mistyped or contradictory field, or an
/// unsupported model_type.
[[nodiscard]] ModelSpec parse_hf_config(const std::string& text, const std::string& origin,
                                        const std::string& name);

/// True when a --type value names a file rather than a built-in model: it holds a '/' or ends
/// in ".json".
[[nodiscard]] bool names_model_file(const std::string& type_arg) noexcept;

/// The default name of the model in `file`: the folder name for a file called config.json
/// (models/Llama-3-8B/config.json -> Llama-3-8B), else the file name without ".json".
[[nodiscard]] std::string model_name_from_path(const std::filesystem::path& file);

/// Reads a model file: a Hugging Face config.json when the object has "model_type", else one
/// model in the project's format (its "name", or model_name_from_path). Throws InputError.
[[nodiscard]] ModelSpec load_model_file(const std::filesystem::path& file);

} // namespace zerosearch
