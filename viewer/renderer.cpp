#include "renderer.h"

#define GLFW_INCLUDE_VULKAN
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <backends/imgui_impl_vulkan.h>

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "vk/buffer.h"
#include "vk/check.h"

namespace kv::viewer {
namespace {

constexpr VkFormat kTargetFormat = VK_FORMAT_R8G8B8A8_UNORM;

void check_imgui_result(VkResult result) {
  if (result != VK_SUCCESS) vk::fail("ImGui Vulkan backend", result);
}

void image_barrier(VkCommandBuffer cb, VkImage image, VkImageLayout from, VkImageLayout to, VkAccessFlags src_access,
                   VkAccessFlags dst_access, VkPipelineStageFlags src_stage, VkPipelineStageFlags dst_stage) {
  VkImageMemoryBarrier barrier{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
  barrier.srcAccessMask = src_access;
  barrier.dstAccessMask = dst_access;
  barrier.oldLayout = from;
  barrier.newLayout = to;
  barrier.srcQueueFamilyIndex = barrier.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  barrier.image = image;
  barrier.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 0, nullptr, 0, nullptr, 1, &barrier);
}

}  // namespace

Renderer::Renderer(const vk::Device& device, GLFWwindow* window, bool present)
    : device_(device), window_(window), present_(present) {
  const VkDevice d = device.handle();
  int width = 0, height = 0;
  glfwGetFramebufferSize(window, &width, &height);
  extent_ = {uint32_t(std::max(width, 1)), uint32_t(std::max(height, 1))};

  if (present_) {
    VkSurfaceKHR surface = VK_NULL_HANDLE;
    KV_VK_CHECK(glfwCreateWindowSurface(device.instance(), window, nullptr, &surface));
    surface_ = vk::UniqueSurface(device.instance(), surface);
    VkBool32 supported = VK_FALSE;
    KV_VK_CHECK(vkGetPhysicalDeviceSurfaceSupportKHR(device.physical(), device.queue_family(), surface, &supported));
    if (!supported) throw DeviceError("the device's queue cannot present to this window");
  }

  VkAttachmentDescription color{};
  color.format = kTargetFormat;
  color.samples = VK_SAMPLE_COUNT_1_BIT;
  color.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
  color.storeOp = VK_ATTACHMENT_STORE_OP_STORE;
  color.stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
  color.stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
  color.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  color.finalLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
  VkAttachmentReference reference{0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
  VkSubpassDescription subpass{};
  subpass.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS;
  subpass.colorAttachmentCount = 1;
  subpass.pColorAttachments = &reference;
  VkSubpassDependency after{0, VK_SUBPASS_EXTERNAL, VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                            VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
                            VK_ACCESS_TRANSFER_READ_BIT, 0};
  VkRenderPassCreateInfo pass_info{VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO};
  pass_info.attachmentCount = 1;
  pass_info.pAttachments = &color;
  pass_info.subpassCount = 1;
  pass_info.pSubpasses = &subpass;
  pass_info.dependencyCount = 1;
  pass_info.pDependencies = &after;
  VkRenderPass render_pass = VK_NULL_HANDLE;
  KV_VK_CHECK(vkCreateRenderPass(d, &pass_info, nullptr, &render_pass));
  render_pass_ = vk::UniqueRenderPass(d, render_pass);

  VkDescriptorPoolSize pool_size{VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 16};
  VkDescriptorPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pool_info.flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT;
  pool_info.maxSets = 16;
  pool_info.poolSizeCount = 1;
  pool_info.pPoolSizes = &pool_size;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  KV_VK_CHECK(vkCreateDescriptorPool(d, &pool_info, nullptr, &pool));
  descriptor_pool_ = vk::UniqueDescriptorPool(d, pool);

  VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  fence_info.flags = VK_FENCE_CREATE_SIGNALED_BIT;
  VkFence fence = VK_NULL_HANDLE;
  KV_VK_CHECK(vkCreateFence(d, &fence_info, nullptr, &fence));
  frame_done_ = vk::UniqueFence(d, fence);
  VkSemaphoreCreateInfo semaphore_info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  VkSemaphore acquired = VK_NULL_HANDLE, rendered = VK_NULL_HANDLE;
  KV_VK_CHECK(vkCreateSemaphore(d, &semaphore_info, nullptr, &acquired));
  image_acquired_ = vk::UniqueSemaphore(d, acquired);
  KV_VK_CHECK(vkCreateSemaphore(d, &semaphore_info, nullptr, &rendered));
  frame_rendered_ = vk::UniqueSemaphore(d, rendered);
  command_buffer_ = device.allocate_command_buffer();

  create_target();
  if (present_) create_swapchain();

  ImGui_ImplVulkan_InitInfo init{};
  init.Instance = device.instance();
  init.PhysicalDevice = device.physical();
  init.Device = d;
  init.QueueFamily = device.queue_family();
  init.Queue = device.queue();
  init.DescriptorPool = descriptor_pool_.get();
  init.MinImageCount = 2;
  init.ImageCount = 2;
  init.MSAASamples = VK_SAMPLE_COUNT_1_BIT;
  init.CheckVkResultFn = check_imgui_result;
  if (!ImGui_ImplVulkan_Init(&init, render_pass_.get())) throw DeviceError("ImGui_ImplVulkan_Init failed");
  device.submit_and_wait([](VkCommandBuffer cb) { ImGui_ImplVulkan_CreateFontsTexture(cb); });
  ImGui_ImplVulkan_DestroyFontUploadObjects();
}

Renderer::~Renderer() {
  vkDeviceWaitIdle(device_.handle());
  ImGui_ImplVulkan_Shutdown();
}

void Renderer::create_target() {
  const VkDevice d = device_.handle();
  framebuffer_.reset();
  target_view_.reset();
  target_.reset();
  target_memory_.reset();
  VkImageCreateInfo image_info{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
  image_info.imageType = VK_IMAGE_TYPE_2D;
  image_info.format = kTargetFormat;
  image_info.extent = {extent_.width, extent_.height, 1};
  image_info.mipLevels = 1;
  image_info.arrayLayers = 1;
  image_info.samples = VK_SAMPLE_COUNT_1_BIT;
  image_info.tiling = VK_IMAGE_TILING_OPTIMAL;
  image_info.usage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT;
  image_info.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  VkImage image = VK_NULL_HANDLE;
  KV_VK_CHECK(vkCreateImage(d, &image_info, nullptr, &image));
  target_ = vk::UniqueImage(d, image);
  VkMemoryRequirements requirements{};
  vkGetImageMemoryRequirements(d, image, &requirements);
  VkMemoryAllocateInfo allocate{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  allocate.allocationSize = requirements.size;
  allocate.memoryTypeIndex = device_.memory_type(requirements.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  VkDeviceMemory memory = VK_NULL_HANDLE;
  KV_VK_CHECK(vkAllocateMemory(d, &allocate, nullptr, &memory));
  target_memory_ = vk::UniqueMemory(d, memory);
  KV_VK_CHECK(vkBindImageMemory(d, image, memory, 0));
  VkImageViewCreateInfo view_info{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
  view_info.image = image;
  view_info.viewType = VK_IMAGE_VIEW_TYPE_2D;
  view_info.format = kTargetFormat;
  view_info.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  VkImageView view = VK_NULL_HANDLE;
  KV_VK_CHECK(vkCreateImageView(d, &view_info, nullptr, &view));
  target_view_ = vk::UniqueImageView(d, view);
  VkFramebufferCreateInfo framebuffer_info{VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO};
  framebuffer_info.renderPass = render_pass_.get();
  framebuffer_info.attachmentCount = 1;
  framebuffer_info.pAttachments = &view;
  framebuffer_info.width = extent_.width;
  framebuffer_info.height = extent_.height;
  framebuffer_info.layers = 1;
  VkFramebuffer framebuffer = VK_NULL_HANDLE;
  KV_VK_CHECK(vkCreateFramebuffer(d, &framebuffer_info, nullptr, &framebuffer));
  framebuffer_ = vk::UniqueFramebuffer(d, framebuffer);
}

void Renderer::create_swapchain() {
  const VkDevice d = device_.handle();
  VkSurfaceCapabilitiesKHR caps{};
  KV_VK_CHECK(vkGetPhysicalDeviceSurfaceCapabilitiesKHR(device_.physical(), surface_.get(), &caps));
  if (!(caps.supportedUsageFlags & VK_IMAGE_USAGE_TRANSFER_DST_BIT))
    throw DeviceError("the window's swapchain images cannot be blitted to");
  uint32_t count = 0;
  vkGetPhysicalDeviceSurfaceFormatsKHR(device_.physical(), surface_.get(), &count, nullptr);
  std::vector<VkSurfaceFormatKHR> formats(count);
  vkGetPhysicalDeviceSurfaceFormatsKHR(device_.physical(), surface_.get(), &count, formats.data());
  VkSurfaceFormatKHR format = formats.front();
  for (const VkSurfaceFormatKHR& f : formats)
    if (f.format == VK_FORMAT_B8G8R8A8_UNORM || f.format == VK_FORMAT_R8G8B8A8_UNORM) format = f;
  VkSwapchainCreateInfoKHR info{VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR};
  info.surface = surface_.get();
  info.minImageCount = std::max(2u, caps.minImageCount);
  if (caps.maxImageCount) info.minImageCount = std::min(info.minImageCount, caps.maxImageCount);
  info.imageFormat = format.format;
  info.imageColorSpace = format.colorSpace;
  info.imageExtent = caps.currentExtent.width != UINT32_MAX ? caps.currentExtent : extent_;
  info.imageArrayLayers = 1;
  info.imageUsage = VK_IMAGE_USAGE_TRANSFER_DST_BIT;
  info.imageSharingMode = VK_SHARING_MODE_EXCLUSIVE;
  info.preTransform = caps.currentTransform;
  info.compositeAlpha = VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR;
  info.presentMode = VK_PRESENT_MODE_FIFO_KHR;
  info.clipped = VK_TRUE;
  info.oldSwapchain = swapchain_.get();
  VkSwapchainKHR swapchain = VK_NULL_HANDLE;
  KV_VK_CHECK(vkCreateSwapchainKHR(d, &info, nullptr, &swapchain));
  swapchain_ = vk::UniqueSwapchain(d, swapchain);
  KV_VK_CHECK(vkGetSwapchainImagesKHR(d, swapchain, &count, nullptr));
  swapchain_images_.resize(count);
  KV_VK_CHECK(vkGetSwapchainImagesKHR(d, swapchain, &count, swapchain_images_.data()));
  extent_ = info.imageExtent;
}

void Renderer::render(ImDrawData* draw_data, std::vector<uint8_t>* rgba) {
  const VkDevice d = device_.handle();
  VkFence fence = frame_done_.get();
  KV_VK_CHECK(vkWaitForFences(d, 1, &fence, VK_TRUE, UINT64_MAX));
  int width = 0, height = 0;
  glfwGetFramebufferSize(window_, &width, &height);
  if (width == 0 || height == 0) return;  // minimised
  const bool resized = uint32_t(width) != extent_.width || uint32_t(height) != extent_.height;
  uint32_t image_index = 0;
  bool presenting = present_;
  if (present_) {
    VkResult acquired = resized ? VK_ERROR_OUT_OF_DATE_KHR
                                : vkAcquireNextImageKHR(d, swapchain_.get(), UINT64_MAX, image_acquired_.get(),
                                                        VK_NULL_HANDLE, &image_index);
    if (acquired == VK_ERROR_OUT_OF_DATE_KHR) {
      vkDeviceWaitIdle(d);
      extent_ = {uint32_t(width), uint32_t(height)};
      create_swapchain();
      create_target();
      return;  // the next frame draws at the new size
    }
    if (acquired != VK_SUBOPTIMAL_KHR) KV_VK_CHECK(acquired);
  } else if (resized) {
    extent_ = {uint32_t(width), uint32_t(height)};
    create_target();
  }
  KV_VK_CHECK(vkResetFences(d, 1, &fence));
  record_and_submit(draw_data, image_index, presenting, rgba);
}

void Renderer::record_and_submit(ImDrawData* draw_data, uint32_t image_index, bool presenting,
                                 std::vector<uint8_t>* rgba) {
  VkCommandBuffer cb = command_buffer_.get();
  KV_VK_CHECK(vkResetCommandBuffer(cb, 0));
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  KV_VK_CHECK(vkBeginCommandBuffer(cb, &begin));
  VkClearValue clear{};
  clear.color = {{0.08f, 0.08f, 0.09f, 1.0f}};
  VkRenderPassBeginInfo pass{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
  pass.renderPass = render_pass_.get();
  pass.framebuffer = framebuffer_.get();
  pass.renderArea.extent = extent_;
  pass.clearValueCount = 1;
  pass.pClearValues = &clear;
  vkCmdBeginRenderPass(cb, &pass, VK_SUBPASS_CONTENTS_INLINE);
  ImGui_ImplVulkan_RenderDrawData(draw_data, cb);
  vkCmdEndRenderPass(cb);

  std::unique_ptr<vk::Buffer> readback;
  if (rgba) {
    readback = std::make_unique<vk::Buffer>(device_, VkDeviceSize(extent_.width) * extent_.height * 4,
                                            vk::MemoryKind::host_staging);
    VkBufferImageCopy region{};
    region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
    region.imageExtent = {extent_.width, extent_.height, 1};
    vkCmdCopyImageToBuffer(cb, target_.get(), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, readback->handle(), 1, &region);
  }
  if (presenting) {
    VkImage image = swapchain_images_[image_index];
    image_barrier(cb, image, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 0,
                  VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT);
    VkImageBlit blit{};
    blit.srcSubresource = blit.dstSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
    blit.srcOffsets[1] = blit.dstOffsets[1] = {int32_t(extent_.width), int32_t(extent_.height), 1};
    vkCmdBlitImage(cb, target_.get(), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                   1, &blit, VK_FILTER_NEAREST);
    image_barrier(cb, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_PRESENT_SRC_KHR,
                  VK_ACCESS_TRANSFER_WRITE_BIT, 0, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT);
  }
  KV_VK_CHECK(vkEndCommandBuffer(cb));

  VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
  VkSemaphore acquired = image_acquired_.get(), rendered = frame_rendered_.get();
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cb;
  if (presenting) {
    submit.waitSemaphoreCount = 1;
    submit.pWaitSemaphores = &acquired;
    submit.pWaitDstStageMask = &wait_stage;
    submit.signalSemaphoreCount = 1;
    submit.pSignalSemaphores = &rendered;
  }
  KV_VK_CHECK(vkQueueSubmit(device_.queue(), 1, &submit, frame_done_.get()));
  if (presenting) {
    VkSwapchainKHR swapchain = swapchain_.get();
    VkPresentInfoKHR present{VK_STRUCTURE_TYPE_PRESENT_INFO_KHR};
    present.waitSemaphoreCount = 1;
    present.pWaitSemaphores = &rendered;
    present.swapchainCount = 1;
    present.pSwapchains = &swapchain;
    present.pImageIndices = &image_index;
    VkResult presented = vkQueuePresentKHR(device_.queue(), &present);
    if (presented != VK_ERROR_OUT_OF_DATE_KHR && presented != VK_SUBOPTIMAL_KHR) KV_VK_CHECK(presented);
  }
  if (rgba) {
    VkFence fence = frame_done_.get();
    KV_VK_CHECK(vkWaitForFences(device_.handle(), 1, &fence, VK_TRUE, UINT64_MAX));
    rgba->resize(size_t(extent_.width) * extent_.height * 4);
    readback->download(std::as_writable_bytes(std::span(*rgba)));
  }
}

}  // namespace kv::viewer
