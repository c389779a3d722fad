// kvscope-viewer: live inspection of what each selection method picks and why.
// Drives the same engine API as the CLI; `--screenshot out.png` renders one
// state and exits, so the viewer can be tested and pictured without a person.
#define GLFW_INCLUDE_VULKAN
#include <algorithm>
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_vulkan.h>
#include <stb_image_write.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "app.h"
#include "base/error.h"
#include "io/bundled.h"
#include "methods/table.h"
#include "renderer.h"

namespace {

const char* const kUsage =
    "usage: kvscope-viewer [CAPTURE] [--device N|NAME] [--debug|--debug-sync] [--layer L] [--decode|--prefill]\n"
    "                      [--block I] [--method M] [--budget K] [--head H] [--chunk B] [method options]\n"
    "                      [--needle RESULTS.json [--needle-rerun I]] [--screenshot OUT.png] [--width W] [--height H]\n"
    "                      [--allow-nonfinite]\n\n"
    "Opens a capture (default: the bundled real passkey capture of llama-debian-5m,\n"
    "assets/real-passkey-4k.safetensors) and re-runs selection, sparse attention and\n"
    "metrics on the GPU whenever the method, budget, layer, head or block changes.\n"
    "--budget takes a key count or a percentage of T (default 3%). --needle shows\n"
    "kvscope needle's JSON as heatmaps and curves; clicking a cell re-runs that prompt\n"
    "through the model and shows the method on its retrieval head (--needle-rerun I: the\n"
    "I-th result's, at the start). --screenshot renders\n"
    "the given state (a few frames, so the layout settles), writes a PNG and exits.\n"
    "Method options are kvscope's (kvscope select --help lists them).\n";

struct GlfwSession {  // glfwInit / glfwTerminate
  GlfwSession() {
    if (!glfwInit()) throw kv::DeviceError("glfwInit failed (no display? run under Xvfb)");
  }
  ~GlfwSession() { glfwTerminate(); }
};

struct Window {  // one GLFW window without a GL context
  Window(int width, int height, bool visible) {
    glfwWindowHint(GLFW_CLIENT_API, GLFW_NO_API);
    glfwWindowHint(GLFW_VISIBLE, visible ? GLFW_TRUE : GLFW_FALSE);
    handle = glfwCreateWindow(width, height, "kvscope-viewer", nullptr, nullptr);
    if (!handle) throw kv::DeviceError("glfwCreateWindow failed");
  }
  ~Window() { glfwDestroyWindow(handle); }
  GLFWwindow* handle = nullptr;
};

struct ImGuiSession {  // the ImGui context and its GLFW backend
  explicit ImGuiSession(GLFWwindow* window) {
    ImGui::CreateContext();
    ImGui::StyleColorsDark();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;  // the layout is fixed; write nothing beside the user's files
    const char* font = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
    if (std::filesystem::exists(font)) io.Fonts->AddFontFromFileTTF(font, 15.0f);
    ImGui_ImplGlfw_InitForVulkan(window, true);
  }
  ~ImGuiSession() {
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
  }
};

bool is_method_option(const std::string& flag) {
  for (const kv::OptionSpec& o : kv::option_table())
    if (flag == o.flag) return true;
  return false;
}

int parse_int(const std::string& option, const char* text) {
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (!*text || *end) throw kv::InputError(option + " expects an integer, got '" + text + "'");
  return int(value);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    kv::viewer::ViewState state;
    kv::vk::DeviceOptions device_options;
    std::string capture_path, screenshot, needle_path;
    int needle_rerun = -1;
    int width = 1600, height = 1000;
    bool layer_given = false;
    std::string budget_text = "3%";
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&]() -> const char* {
        if (i + 1 >= argc) throw kv::InputError(a + " needs a value");
        return argv[++i];
      };
      if (a == "--help" || a == "-h") {
        std::fputs(kUsage, stdout);
        return 0;
      } else if (a == "--device") device_options.selector = value();
      else if (a == "--debug") device_options.validation = true;
      else if (a == "--debug-sync") device_options.validation = device_options.sync_validation = true;
      else if (a == "--layer") { state.layer = parse_int(a, value()); layer_given = true; }
      else if (a == "--decode") state.mode = kv::Mode::decode;
      else if (a == "--prefill") state.mode = kv::Mode::prefill;
      else if (a == "--block") state.block = parse_int(a, value());
      else if (a == "--method") state.method = value();
      else if (a == "--budget") budget_text = value();
      else if (a == "--head") state.head = parse_int(a, value());
      else if (a == "--chunk") state.chunk = uint32_t(parse_int(a, value()));
      else if (a == "--screenshot") screenshot = value();
      else if (a == "--needle") needle_path = value();
      else if (a == "--needle-rerun") needle_rerun = parse_int(a, value());
      else if (a == "--allow-nonfinite") state.allow_nonfinite = true;
      else if (a == "--width") width = parse_int(a, value());
      else if (a == "--height") height = parse_int(a, value());
      else if (a.rfind("--", 0) == 0 && is_method_option(a.substr(2))) kv::find_option(a.substr(2)).parse(state.options, value());
      else if (a.rfind("--", 0) == 0) throw kv::InputError("unknown option " + a + " (see --help)");
      else if (capture_path.empty()) capture_path = a;
      else throw kv::InputError("more than one capture given");
    }
    if (capture_path.empty()) capture_path = kv::bundled_asset("real-passkey-4k.safetensors").string();
    state.complete_before_drawing = !screenshot.empty();
    if (state.chunk < 1 || width < 320 || height < 240)
      throw kv::InputError("--chunk, --width and --height must be positive (window at least 320x240)");
    kv::find_method(state.method);  // refuses an unknown one, listing the known

    auto capture = std::make_unique<kv::Capture>(capture_path);
    state.budget = int(kv::parse_budget(budget_text, capture->tokens(), "--budget"));
    kv::require_finite(*capture, state.allow_nonfinite);
    if (!layer_given) state.layer = capture->layers().front().index;
    capture->layer(state.layer);  // refuses a missing layer now, with the one-line error
    std::optional<kv::viewer::NeedleResults> needle;
    if (!needle_path.empty()) needle = kv::viewer::read_needle_results(needle_path);
    if (needle_rerun >= 0 && (!needle || size_t(needle_rerun) >= needle->cells.size()))
      throw kv::InputError("--needle-rerun needs --needle and one of its " + std::to_string(needle ? needle->cells.size() : 0) + " results");

    GlfwSession glfw;
    const bool interactive = screenshot.empty();
    Window window(width, height, interactive);
    uint32_t count = 0;
    const char** extensions = glfwGetRequiredInstanceExtensions(&count);
    if (interactive && !extensions) throw kv::DeviceError("GLFW finds no Vulkan surface support for this display");
    for (uint32_t i = 0; interactive && i < count; ++i) device_options.instance_extensions.push_back(extensions[i]);
    if (interactive) device_options.device_extensions.push_back(VK_KHR_SWAPCHAIN_EXTENSION_NAME);
    device_options.graphics = true;
    kv::vk::Device device(device_options);

    ImGuiSession imgui(window.handle);
    kv::viewer::Renderer renderer(device, window.handle, interactive);
    kv::viewer::App app(device, std::move(capture), capture_path, state);
    if (needle) app.load_needle(std::move(*needle), needle_rerun);
    const int screenshot_frame = 4;  // ImGui needs a few frames to size and place windows
    for (int frame = 0; !glfwWindowShouldClose(window.handle); ++frame) {
      glfwPollEvents();
      ImGui_ImplVulkan_NewFrame();
      ImGui_ImplGlfw_NewFrame();
      if (!interactive) ImGui::GetIO().DisplaySize = ImVec2(float(width), float(height));
      ImGui::NewFrame();
      app.frame();
      ImGui::Render();
      if (!interactive && frame == screenshot_frame) {
        std::vector<uint8_t> rgba;
        renderer.render(ImGui::GetDrawData(), &rgba);
        const std::string temporary = screenshot + ".partial";
        if (!stbi_write_png(temporary.c_str(), int(renderer.width()), int(renderer.height()), 4, rgba.data(),
                            int(renderer.width()) * 4) ||
            std::rename(temporary.c_str(), screenshot.c_str()) != 0) {
          std::remove(temporary.c_str());
          throw kv::InputError("cannot write " + screenshot);
        }
        std::printf("wrote %s (%ux%u)\n", screenshot.c_str(), renderer.width(), renderer.height());
        break;
      }
      renderer.render(ImGui::GetDrawData());
    }
    if (device_options.validation && device.validation_messages() > 0) {
      std::fprintf(stderr, "kvscope-viewer: the validation layer reported %llu message(s)\n",
                   (unsigned long long)device.validation_messages());
      return 1;
    }
    return 0;
  } catch (const kv::InputError& e) {
    // The engine names a setting in its own words; the viewer's flag is the same with dashes.
    std::string flag = e.setting;
    std::replace(flag.begin(), flag.end(), '_', '-');
    std::fprintf(stderr, "kvscope-viewer: %s%s%s\n", flag.empty() ? "" : "--", flag.empty() ? "" : (flag + ": ").c_str(), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kvscope-viewer: %s\n", e.what());
    return 1;
  }
}
