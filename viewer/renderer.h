#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>
#include <vector>

#include "vk/device.h"
#include "vk/handle.h"

struct GLFWwindow;
struct ImDrawData;

namespace kv::viewer {

// Draws Dear ImGui into an offscreen image on the engine's device, then blits
// it to the window's swapchain (interactive) or reads it back (screenshots).
// Owns every Vulkan object of the drawing side; the ImGui Vulkan backend is
// initialised and shut down with it.
class Renderer {
 public:
  Renderer(const vk::Device& device, GLFWwindow* window, bool present);
  ~Renderer();
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  // Renders a frame; with `rgba`, also returns its pixels (width x height x 4).
  void render(ImDrawData* draw_data, std::vector<uint8_t>* rgba = nullptr);
  uint32_t width() const { return extent_.width; }
  uint32_t height() const { return extent_.height; }

 private:
  void create_target();
  void create_swapchain();
  void record_and_submit(ImDrawData* draw_data, uint32_t image_index, bool presenting, std::vector<uint8_t>* rgba);

  const vk::Device& device_;
  GLFWwindow* window_;
  bool present_;
  VkExtent2D extent_{};
  vk::UniqueSurface surface_;
  vk::UniqueSwapchain swapchain_;
  std::vector<VkImage> swapchain_images_;
  vk::UniqueRenderPass render_pass_;
  vk::UniqueImage target_;
  vk::UniqueMemory target_memory_;
  vk::UniqueImageView target_view_;
  vk::UniqueFramebuffer framebuffer_;
  vk::UniqueDescriptorPool descriptor_pool_;
  vk::UniqueCommandBuffer command_buffer_;
  vk::UniqueFence frame_done_;
  vk::UniqueSemaphore image_acquired_;
  vk::UniqueSemaphore frame_rendered_;
};

}  // namespace kv::viewer
